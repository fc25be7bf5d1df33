"""Two Daphne processes sharing PostgreSQL and Redis: a right taken away on one process, or
by a command in a third, closes within a second the socket the other serves, and that
socket hears nothing of the next turn its rightful owner asks over the REST API. Without
any signal (a raw SQL update), the socket's check before a new turn still shows nothing.
Needs DATABASE_URL (PostgreSQL) and REDIS_URL; skipped without them unless
REQUIRE_SERVICES=1."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.support.revocation import (
    Browser,
    live_close_code,
    live_silent_socket,
    live_turn_over_the_api,
)
from tests.support.servers import manage, serve, services, two_servers

pytestmark = pytest.mark.server

LOGIN, CONVERSATION = 4401, 4404
PASSWORD = "a long enough password 1"
NAMES = ["pat", "lou", "ada", "max", "eve", "kim", "new-owner", "sql"]

_USERS = (
    "import json; from django.contrib.auth.models import User; "
    "from rest_framework.authtoken.models import Token; tokens = dict()\n"
    "for name in {names!r}:\n"
    "    user = User.objects.create_user(name, password={password!r})\n"
    "    tokens[name] = Token.objects.create(user=user).key\n"
    "print(json.dumps(tokens))"
)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    with two_servers(tmp_path_factory.mktemp("revoke"), GLASSBOX_DEMO_DELAY="0.005") as pair:
        script = _USERS.format(names=NAMES, password=PASSWORD)
        tokens = json.loads(manage(pair[0].env, "shell", "-c", script).splitlines()[-1])
        yield pair, tokens


def shell(server, code: str) -> None:
    """Python run by `manage.py shell`: a third process, as an admin's script would be."""
    manage(server.env, "shell", "-c", code)


def revoked_while_silent(servers, name: str, revoke, rightful: str | None):
    """`name` opens a conversation on the first process and a socket to it on the second,
    asks once, and goes silent; `revoke(browser, conversation)` takes the right away from
    outside that process. Returns the code the socket was closed with (within 1 s of the
    change's end), after `rightful` (if any) asked the next turn over the API."""
    (first, second), tokens = servers
    browser = Browser(first.url, name, PASSWORD)
    conversation = browser.new_conversation()

    async def scenario() -> int | None:
        socket = await live_silent_socket(second.url, conversation, browser.cookies)
        await asyncio.to_thread(revoke, browser, conversation)
        code = await live_close_code(socket, within=1.0)
        if rightful is not None:
            await asyncio.to_thread(
                live_turn_over_the_api, first.url, tokens[rightful], conversation
            )
        return code

    return asyncio.run(scenario())


def test_a_password_changed_on_one_process_closes_the_socket_on_the_other(servers):
    def change_password(browser, conversation):
        browser.post(
            "/accounts/password_change/",
            {"old_password": PASSWORD, "new_password1": PASSWORD + "!",
             "new_password2": PASSWORD + "!"},
        )  # fmt: skip

    assert revoked_while_silent(servers, "pat", change_password, rightful="pat") == LOGIN


def test_logging_out_on_one_process_closes_that_sessions_socket_on_the_other(servers):
    def log_out(browser, conversation):
        browser.post("/accounts/logout/", {})

    assert revoked_while_silent(servers, "lou", log_out, rightful="lou") == LOGIN


def test_a_user_deactivated_and_reactivated_elsewhere_loses_the_socket(servers):
    def deactivate_and_reactivate(browser, conversation):
        shell(
            servers[0][0],
            "from django.contrib.auth.models import User; u = User.objects.get(username='ada')\n"
            "u.is_active = False; u.save(); u.is_active = True; u.save()",
        )

    assert revoked_while_silent(servers, "ada", deactivate_and_reactivate, "ada") == LOGIN


def test_a_conversation_moved_to_another_user_closes_the_old_owners_socket(servers):
    def move(browser, conversation):
        shell(
            servers[0][0],
            "from django.contrib.auth.models import User; from chat.models import Conversation\n"
            f"c = Conversation.objects.get(pk='{conversation}')\n"
            "c.owner = User.objects.get(username='new-owner'); c.save()",
        )

    assert revoked_while_silent(servers, "max", move, rightful="new-owner") == CONVERSATION


def test_a_conversation_deleted_in_another_tab_closes_its_socket(servers):
    def delete_in_another_tab(browser, conversation):
        other_tab = Browser(browser.url, "eve", PASSWORD)
        other_tab.post(f"/c/{conversation}/delete/", {})

    assert revoked_while_silent(servers, "eve", delete_in_another_tab, None) == CONVERSATION


def test_an_erased_account_loses_its_socket(servers):
    def erase(browser, conversation):
        manage(servers[0][0].env, "erase_user", "kim", "--yes")

    assert revoked_while_silent(servers, "kim", erase, rightful=None) == LOGIN


def test_without_any_signal_the_next_turn_still_reaches_nothing_but_the_close(servers):
    """The second wall alone: a password replaced by raw SQL tells no process; the socket
    finds out as the next turn starts, and closes before relaying any of it."""
    (first, second), tokens = servers
    browser = Browser(first.url, "sql", PASSWORD)
    conversation = browser.new_conversation()

    async def scenario() -> int | None:
        socket = await live_silent_socket(second.url, conversation, browser.cookies)
        await asyncio.to_thread(
            shell,
            first,
            "from django.contrib.auth.hashers import make_password\n"
            "from django.contrib.auth.models import User\n"
            "User.objects.filter(username='sql').update(password=make_password('other'))",
        )
        with pytest.raises(TimeoutError):  # nobody told it
            await asyncio.wait_for(socket.recv(), 0.5)
        await asyncio.to_thread(live_turn_over_the_api, first.url, tokens["sql"], conversation)
        return await live_close_code(socket, within=1.0)

    assert asyncio.run(scenario()) == LOGIN


def test_deployments_sharing_one_redis_revoke_only_their_own_sockets(tmp_path):
    """Two deployments, each with its own database (where `demo` is user 1 in both) and its
    own GLASSBOX_CHANNEL_PREFIX, share one Redis: a password changed on one closes nothing
    on the other."""
    _, redis = services()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        serve(tmp_path / "a", REDIS_URL=redis, GLASSBOX_DEMO_DELAY="0.005") as a,
        serve(tmp_path / "b", REDIS_URL=redis, GLASSBOX_DEMO_DELAY="0.005") as b,
    ):
        on_a, on_b = Browser(a.url, "demo", "demo"), Browser(b.url, "demo", "demo")
        conversation = on_b.new_conversation()

        async def scenario() -> None:
            socket = await live_silent_socket(b.url, conversation, on_b.cookies)
            await asyncio.to_thread(
                on_a.post,
                "/accounts/password_change/",
                {"old_password": "demo", "new_password1": PASSWORD,
                 "new_password2": PASSWORD},
            )  # fmt: skip
            with pytest.raises(TimeoutError):
                await live_close_code(socket, within=1.5)
            await socket.send(json.dumps({"message": "Tell me a joke"}))
            while json.loads(await asyncio.wait_for(socket.recv(), 30))["type"] != "done":
                pass
            await socket.close()

        asyncio.run(scenario())
