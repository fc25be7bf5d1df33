"""A database that goes away and comes back: the background loops reconnect, and while it is
away the API answers JSON 503s and the pages a plain 503, storing nothing half-way."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError, connection, transaction
from rest_framework.authtoken.models import Token

from activity.models import ActivityFeed
from chat.models import Message, ToolApproval
from project.outages import unreachable
from tests.support.api import turns_url
from tests.support.outages import (
    backend_pid,
    connection_cut_on_insert,
    cut,
    database_refusing,
    postgres_only,
    side_connection,
)
from tests.support.sockets import (
    ask,
    finish_turns,
    json_until_done,
    json_until_waiting,
    open_socket,
)

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


def set_deadlines(when: str) -> None:
    with side_connection() as side:
        side.execute(
            f"UPDATE {ToolApproval._meta.db_table} SET deadline = now() + %s::interval", [when]
        )


@pytest.mark.asyncio
async def test_the_deadline_watch_settles_a_call_after_a_database_restart(
    alice, alice_conversation, settings
):
    postgres_only()
    settings.GLASSBOX_APPROVAL_TIMEOUT = 4  # the watch looks once a second
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, EMAIL)
    await json_until_waiting(socket)
    set_deadlines("1 hour")
    # The connection of the database thread, where the watch reads, is cut after a read that
    # left it trusted, as a restart of PostgreSQL cuts every connection of every process.
    cut(await sync_to_async(backend_pid)())
    set_deadlines("-1 second")

    rest = await json_until_done(socket, limit=15)
    await finish_turns()
    await socket.disconnect()

    assert rest[0]["type"] == "decision" and rest[0]["decision"] == "timeout"
    assert rest[-1]["state"] == "complete"
    assert (await ToolApproval.objects.aget()).decision == "timeout"


def test_while_the_database_refuses_the_api_answers_json_503s_and_stores_nothing(
    client, alice, alice_conversation
):
    token = Token.objects.create(user=alice)
    by_token = {"Authorization": f"Token {token.key}"}
    with database_refusing():
        # A token is read by the API's authentication, in the view.
        asked = client.post(
            turns_url(alice_conversation), {"content": "Hello?"},
            content_type="application/json", headers=by_token,
        )  # fmt: skip
        listed = client.get("/api/conversations/", headers=by_token)
    client.force_login(alice)
    with database_refusing():
        # A login session is read before any view.
        asked_in_session = client.post(
            turns_url(alice_conversation), {"content": "Hello?"}, content_type="application/json"
        )

    for response in (asked, listed, asked_in_session):
        assert response.status_code == 503
        assert response["Content-Type"] == "application/json"
        assert response["Retry-After"] == "5"
        assert response.json() == {
            "detail": "The database does not answer right now; try again in a moment."
        }
    assert not Message.objects.exists() and not ActivityFeed.objects.exists()


def test_a_question_whose_database_goes_away_mid_admission_is_not_stored_at_all(
    client, alice, alice_conversation
):
    postgres_only()
    client.force_login(alice)
    # The question is inserted, then the connection is lost at its answer's feed.
    with connection_cut_on_insert(ActivityFeed):
        asked = client.post(
            turns_url(alice_conversation), {"content": "Hello?"}, content_type="application/json"
        )

    assert asked.status_code == 503 and asked["Retry-After"] == "5"
    assert asked.json()["detail"].startswith("The database does not answer")
    assert not Message.objects.exists() and not ActivityFeed.objects.exists()
    # The next request is served on a new connection.
    assert client.get("/api/conversations/").status_code == 200


def test_while_the_database_refuses_a_page_is_a_plain_503_in_the_readers_language(
    client, alice, alice_conversation
):
    client.force_login(alice)
    with database_refusing():
        page = client.get(alice_conversation.get_absolute_url(), HTTP_ACCEPT_LANGUAGE="it")

    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert '<html lang="it">' in text
    assert "Il database non risponde in questo momento; riprova tra un momento." in text


def test_the_schema_documents_the_503_and_its_retry_after_on_every_operation(client):
    schema = json.loads(
        client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
    )
    operations = [op for path in schema["paths"].values() for op in path.values()]
    assert operations
    for operation in operations:
        unavailable = operation["responses"]["503"]
        assert "database" in unavailable["description"]
        assert unavailable["headers"]["Retry-After"]["schema"]["type"] == "integer"


def test_only_a_database_out_of_reach_counts_as_away():
    """A refused connection means no turn's runner could beat meanwhile, and gives silent
    turns another grace (chat.turns.recovery); a statement the database refused (a timeout, a
    deadlock) says nothing of the others."""
    postgres_only()
    with database_refusing(), pytest.raises(OperationalError) as refused:
        Message.objects.count()
    with (
        pytest.raises(OperationalError) as timed_out,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("SET LOCAL statement_timeout = 1")
        cursor.execute("SELECT pg_sleep(1)")

    assert unreachable(refused.value)
    assert not unreachable(timed_out.value)
