"""MCP servers each user connects to with their own OAuth grant, against a real MCP server
with its own authorization server (tests.support.oauth_server, the SDK's server auth): the
turn asks in its feed and goes on after consent, each user's tools act with their own token,
refusals and timeouts end the wait, refreshes and disconnections are recorded, and no token
is ever shown, exported or logged."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.test import AsyncClient, Client
from mcp.shared.auth import OAuthToken

from activity.models import ActivityEvent
from chat.agent.mcp.oauth import user_pool
from chat.models import Conversation
from chat.servers.models import McpConsent, McpGrant, McpGrantRecord
from chat.servers.secrets import seal, unseal
from tests.support.fakes import text_response, tool_call_response
from tests.support.oauth import consent, oauth_server
from tests.support.provider_server import scripted_provider
from tests.support.responses import streamed
from tests.support.sockets import ask, finish_turns, json_turn, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

WHOAMI = "notes__whoami {}"


@pytest_asyncio.fixture
async def user_sessions(settings, sessions):
    settings.GLASSBOX_OAUTH_REDIRECT_URL = "http://testserver/accounts/connections/callback/"
    yield user_pool()
    await finish_turns()
    await user_pool().close()


@pytest.fixture(scope="module")
def notes():
    """One OAuth server for the tests that need no special one (each has its own users)."""
    with oauth_server() as spec:
        yield spec


def text(events: list[dict]) -> str:
    return "".join(e["content"] for e in events if e["type"] == "text")


def connect_lines(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "status" and e.get("tool") == "connect"]


def called(events: list[dict]) -> list[str]:
    return [e["tool"] for e in events if e["type"] == "tool_call"]


async def until_asked(socket) -> list[dict]:
    """The turn's events up to its 🔑 line."""
    events: list[dict] = []
    while not connect_lines(events):
        events.append(json.loads(await socket.receive_from(timeout=20)))
    return events


async def connected_turn(conversation, user, *, person: str, decision: str = "grant"):
    """A turn that asks its user to connect, answered by them at the consent page: its
    events, and the callback's page."""
    socket = await open_socket(conversation, user, as_json=True)
    page = await open_socket(conversation, user)
    await ask(socket, WHOAMI)
    asked = await until_asked(socket)
    client = Client()
    await sync_to_async(client.force_login)(user)
    answered = await sync_to_async(consent)(client, "notes", person=person, decision=decision)
    events = [*asked, *await json_until_done(socket, 20)]
    frames = []
    while not await page.receive_nothing(timeout=0.05):
        frames.append(await page.receive_from())
    await finish_turns()
    await socket.disconnect()
    await page.disconnect()
    return events, answered, "".join(frames)


async def test_a_turn_asks_its_user_to_connect_and_goes_on_with_the_tools_answer(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    events, answered, html = await connected_turn(alice_conversation, alice, person="alice@notes")

    asked, *_ = connect_lines(events)
    assert asked["message"] == "Connect to notes — it asks for: notes:read"
    assert [e["state"] for e in connect_lines(events)] == ["in_progress", "done"]  # asked once
    # The model opened the server when it needed it, and the same turn called its tool.
    assert called(events) == ["connect_notes", "notes__whoami"]
    assert len({e["message_id"] for e in events if e["type"] in ("turn", "done")}) == 1
    assert asked["state"] == "in_progress" and asked["icon"] == "🔑"
    # The page's line links to the authorization, in a new tab.
    assert 'href="/accounts/connections/notes/authorize/" target="_blank"' in html
    assert "Connected to notes" in answered.content.decode()
    assert connect_lines(events)[-1]["message"] == "Connected to notes"
    assert connect_lines(events)[-1]["state"] == "done"
    assert "you are alice@notes" in text(events)
    assert events[-1]["state"] == "complete"
    grant = await McpGrant.objects.aget(user=alice, server="notes")
    assert grant.scopes == "notes:read" and grant.connected_at is not None
    actions = [r.action async for r in McpGrantRecord.objects.filter(user=alice)]
    assert "granted" in actions


async def test_a_question_that_needs_none_of_the_servers_tools_asks_nobody_and_waits_for_nothing(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    events = await json_turn(alice_conversation, alice, "Tell me a joke")

    assert not connect_lines(events) and not called(events)
    assert events[-1]["state"] == "complete" and text(events)
    # Nothing was opened for it: no session, no authorization waiting, nothing recorded.
    assert not user_sessions.connections
    assert not await McpConsent.objects.aexists()
    assert not await McpGrantRecord.objects.aexists()


async def test_two_users_two_tokens_each_tool_call_acts_for_its_own_user(
    settings, notes, user_sessions, alice, bob, alice_conversation
):
    bob_conversation = await Conversation.objects.acreate(owner=bob)
    settings.GLASSBOX_MCP_SERVERS = [notes]
    await connected_turn(alice_conversation, alice, person="alice@notes")
    await connected_turn(bob_conversation, bob, person="bob@notes")
    # Both connected now: their next turns ask nobody.
    alice_again = await json_turn(alice_conversation, alice, WHOAMI)
    bob_again = await json_turn(bob_conversation, bob, WHOAMI)

    assert not connect_lines(alice_again) and not connect_lines(bob_again)
    assert "you are alice@notes" in text(alice_again)
    assert "you are bob@notes" in text(bob_again)
    tokens = {
        grant.user_id: json.loads(unseal(grant.tokens))["access_token"]
        async for grant in McpGrant.objects.all()
    }
    assert len(set(tokens.values())) == 2


async def test_after_a_restart_a_connected_user_is_not_asked_again_when_the_server_opens(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    await connected_turn(alice_conversation, alice, person="alice@notes")
    await user_sessions.close()  # the process restarts: no session is open, the grant is kept

    events = await json_turn(alice_conversation, alice, WHOAMI)

    assert called(events) == ["notes__whoami"], "the stored grant opened the session"
    assert not connect_lines(events)
    assert "you are alice@notes" in text(events)
    assert not await McpConsent.objects.filter(answered_at=None).aexists()


def offered(request: dict) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


async def test_a_connected_users_first_turn_after_a_restart_calls_the_tool_in_its_first_round(
    settings, notes, user_sessions, alice, bob, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    # A configured model is not the demo: the tokens need a key of their own.
    settings.GLASSBOX_TOKEN_KEY = Fernet.generate_key().decode()
    await connected_turn(alice_conversation, alice, person="alice@notes")
    await user_sessions.close()  # the process restarts: no session is open, the grant is kept
    bob_conversation = await Conversation.objects.acreate(owner=bob)
    arguments = json.dumps({"feedback_to_user": "Asking notes who you are"})
    script = [
        tool_call_response(("call_w", "notes__whoami", arguments)),
        text_response("You are alice."),
        text_response("Why did the server cross the road?"),
    ]
    with scripted_provider(script) as provider:
        settings.OPENAI_API_KEY = "sk-test"
        settings.OPENAI_BASE_URL = provider.url
        settings.GLASSBOX_MODEL = "scripted"
        events = await json_turn(alice_conversation, alice, "Who am I at notes?")
        joke = await json_turn(bob_conversation, bob, "Tell me a joke")

    alice_first, alice_second, bob_first = provider.requests
    # Alice's stored grant opened her session before the model's first round: it was
    # offered the server's tools, called one, and the turn took two rounds, not three.
    assert "notes__whoami" in offered(alice_first)
    assert "connect_notes" not in offered(alice_first)
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["call_id"] == "call_w" and result["ok"], events
    assert "you are alice@notes" in json.dumps(alice_second["messages"])
    assert not connect_lines(events) and events[-1]["state"] == "complete"
    # Bob has no grant: he is offered the connect tool, opens nothing and is asked nothing.
    assert "connect_notes" in offered(bob_first) and "notes__whoami" not in offered(bob_first)
    assert joke[-1]["state"] == "complete" and not connect_lines(joke)
    assert ("notes", bob.pk) not in user_sessions.connections
    assert not await McpConsent.objects.filter(user=bob).aexists()


async def test_a_stored_grant_that_no_longer_works_asks_nobody_until_the_model_needs_the_server(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    await connected_turn(alice_conversation, alice, person="alice@notes")
    await user_sessions.close()
    # The authorization server no longer takes the stored token, and it cannot be refreshed.
    revoked = OAuthToken(access_token="revoked", token_type="Bearer").model_dump_json()
    await McpGrant.objects.filter(user=alice).aupdate(tokens=seal(revoked))

    events, _answered, _page = await connected_turn(alice_conversation, alice, person="alice@n")

    # The turn's quiet try with the stored grant asked nobody; the model was offered the
    # connect tool, which asked once, and the turn went on with the new grant.
    assert called(events) == ["connect_notes", "notes__whoami"]
    assert [e["state"] for e in connect_lines(events)] == ["in_progress", "done"]
    assert "you are alice@n" in text(events)


async def test_a_user_who_declines_is_not_connected_and_the_turn_goes_on_without_the_server(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    events, answered, _ = await connected_turn(
        alice_conversation, alice, person="alice@notes", decision="deny"
    )

    assert "Not connected to notes" in answered.content.decode()
    assert connect_lines(events)[-1]["message"] == "Not connected to notes: you declined"
    assert connect_lines(events)[-1]["state"] == "failed"
    assert called(events) == ["connect_notes"]  # none of the server's own tools ran
    (opened,) = [e for e in events if e["type"] == "tool_result"]
    assert not opened["ok"]
    assert events[-1]["state"] == "complete"
    assert not await McpGrant.objects.exclude(tokens="").aexists()
    record = await McpGrantRecord.objects.aget(user=alice)
    assert (record.action, record.detail) == ("refused", "access_denied")


async def test_a_consent_nobody_answers_ends_at_its_deadline_as_refused(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_OAUTH_CONSENT_TIMEOUT = 0.3
    settings.GLASSBOX_MCP_SERVERS = [notes]
    events = await json_turn(alice_conversation, alice, WHOAMI)

    assert connect_lines(events)[-1]["message"] == "Not connected to notes: no answer in time"
    assert events[-1]["state"] == "complete"
    record = await McpGrantRecord.objects.aget(user=alice)
    assert (record.action, record.detail) == ("refused", "timed_out")


async def test_an_answer_naming_another_issuer_is_refused_and_stores_no_token(
    settings, user_sessions, alice, alice_conversation
):
    with oauth_server(OAUTH_BENCH_WRONG_ISS="1") as spec:
        settings.GLASSBOX_MCP_SERVERS = [spec]
        events, _, _ = await connected_turn(alice_conversation, alice, person="alice@notes")

    assert connect_lines(events)[-1]["state"] == "failed"
    assert called(events) == ["connect_notes"]
    assert not await McpGrant.objects.exclude(tokens="").aexists()
    assert await McpGrantRecord.objects.filter(user=alice, action="refused").aexists()


async def test_an_expired_token_is_refreshed_and_the_refresh_recorded(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    await connected_turn(alice_conversation, alice, person="alice@notes")
    first = json.loads(unseal((await McpGrant.objects.aget(user=alice)).tokens))
    # The access token's lifetime ends (as the authorization server said it would).
    connection = user_sessions.connections["notes", alice.pk]
    connection.provider.context.token_expiry_time = time.time() - 1
    events = await json_turn(alice_conversation, alice, WHOAMI)

    assert not connect_lines(events)  # refreshed, nobody asked
    assert "you are alice@notes" in text(events)
    grant = await McpGrant.objects.aget(user=alice)
    assert json.loads(unseal(grant.tokens))["access_token"] != first["access_token"]
    assert grant.refreshed_at is not None
    actions = [r.action async for r in McpGrantRecord.objects.filter(user=alice)]
    assert actions == ["refreshed", "granted"]


async def test_no_token_appears_in_the_admin_the_exports_or_the_logs(
    settings, notes, user_sessions, alice, alice_conversation, admin_user, caplog
):
    caplog.set_level(logging.DEBUG)
    settings.GLASSBOX_MCP_SERVERS = [notes]
    await connected_turn(alice_conversation, alice, person="alice@notes")
    await json_turn(alice_conversation, alice, WHOAMI)
    grant = await McpGrant.objects.aget(user=alice)
    stored = json.loads(unseal(grant.tokens))
    secrets = [stored["access_token"], stored["refresh_token"]]

    admin = AsyncClient()
    await admin.aforce_login(admin_user)
    owner = AsyncClient()
    await owner.aforce_login(alice)
    pages = [
        (admin, "/admin/servers/mcpgrant/"),
        (admin, f"/admin/servers/mcpgrant/{grant.pk}/change/"),
        (admin, "/admin/servers/mcpgrantrecord/"),
        (admin, "/api/feeds/export/?format=ndjson"),
        (owner, "/accounts/connections/"),
        (owner, "/api/feeds/export/?format=ndjson"),
        (owner, f"/c/{alice_conversation.pk}/export.md"),
        (owner, f"/c/{alice_conversation.pk}/"),
    ]
    for client, path in pages:
        response = await client.get(path)
        assert response.status_code == 200, path
        body = b"".join(await streamed(response)) if response.streaming else response.content
        assert not any(secret.encode() in body for secret in secrets), path
    assert "notes:read" in (await owner.get("/accounts/connections/")).content.decode()
    assert not any(secret in grant.tokens for secret in secrets)  # encrypted at rest
    assert not any(secret in caplog.text for secret in secrets)


async def test_a_turn_stopped_while_it_waits_for_consent_ends_and_a_later_grant_adds_nothing(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, WHOAMI)
    events = await until_asked(socket)
    answer_id = next(e["message_id"] for e in events if e["type"] == "turn")
    await socket.send_to(text_data=json.dumps({"stop": answer_id}))
    events += await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    written = await ActivityEvent.objects.acount()
    # The user grants afterwards, in the tab they opened: the grant is theirs to keep.
    client = Client()
    await sync_to_async(client.force_login)(alice)
    await sync_to_async(consent)(client, "notes", person="alice@notes")
    async with asyncio.timeout(20):
        await user_sessions.connections["notes", alice.pk].up.wait()

    assert events[-1]["state"] == "stopped"
    assert await ActivityEvent.objects.acount() == written
    assert await McpGrant.objects.exclude(tokens="").filter(user=alice).aexists()


async def test_a_call_that_needs_a_wider_scope_asks_again_and_goes_on(
    settings, notes, user_sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [notes]
    await connected_turn(alice_conversation, alice, person="alice@notes")
    # The server answers this call 403 insufficient_scope: the same turn asks for more.
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, 'notes__write_note {"text": "hello"}')
    events = await until_asked(socket)
    client = Client()
    await sync_to_async(client.force_login)(alice)
    await sync_to_async(consent)(client, "notes", person="alice@notes")
    events += await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    asked, connected = connect_lines(events)
    assert asked["message"] == "Connect to notes — it asks for: notes:read, notes:write"
    assert (connected["message"], connected["state"]) == ("Connected to notes", "done")
    assert "alice@notes wrote hello" in text(events)
    assert events[-1]["state"] == "complete"
    grant = await McpGrant.objects.aget(user=alice)
    assert set(grant.scopes.split()) == {"notes:read", "notes:write"}
