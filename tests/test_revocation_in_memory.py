"""On the in-memory channel layer (no REDIS_URL, the default), a right taken away by another
process (`manage.py shell`, `manage.py erase_user`) cannot be told through the layer: it is
written down with the change, and the serving process reads it within a second
(GLASSBOX_REVOCATION_POLL_SECONDS), not when the next turn starts nor at the socket's own
check a minute later."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.revocation import Browser, live_close_code, live_silent_socket
from tests.support.servers import manage, serve

pytestmark = [pytest.mark.server, pytest.mark.own_site]

LOGIN = 4401
# The relay reads once a second; its statement and the close's frame on a busy machine take
# the rest.
WITHIN = 1.5


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # In-memory whatever the environment says (CI exports REDIS_URL for other tests).
    with serve(tmp_path_factory.mktemp("in-memory"), REDIS_URL="") as live:
        manage(
            live.env,
            "shell",
            "-c",
            "from django.contrib.auth.models import User\n"
            "for name in ('pat', 'kim'): User.objects.create_user(name, password='pw-' + name)",
        )
        yield live


def closed_after(server, name: str, command: tuple[str, ...]) -> int | None:
    """`name`'s socket asked once and went silent; `command` runs in a `manage.py` process of
    its own. The code the socket was closed with, within WITHIN seconds of its end."""
    browser = Browser(server.url, name, f"pw-{name}")
    conversation = browser.new_conversation()

    async def scenario() -> int | None:
        socket = await live_silent_socket(server.url, conversation, browser.cookies)
        await asyncio.to_thread(manage, server.env, *command)
        return await live_close_code(socket, within=WITHIN)

    return asyncio.run(scenario())


def test_a_password_changed_from_a_shell_closes_the_socket_within_a_second(server):
    change = (
        "from django.contrib.auth.models import User; u = User.objects.get(username='pat')\n"
        "u.set_password('a long enough password 1'); u.save()"
    )
    assert closed_after(server, "pat", ("shell", "-c", change)) == LOGIN


def test_an_account_erased_by_erase_user_loses_its_socket_within_a_second(server):
    assert closed_after(server, "kim", ("erase_user", "kim", "--yes")) == LOGIN
