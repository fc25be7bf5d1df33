"""A database that goes away and comes back: the background loops reconnect, and while it is
away the API answers JSON 503s and the pages a plain 503, storing nothing half-way."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chat.models import ToolApproval
from tests.support.outages import backend_pid, cut, postgres_only, side_connection
from tests.support.sockets import (
    ask,
    finish_turns,
    json_until_done,
    json_until_waiting,
    open_socket,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


def set_deadlines(when: str) -> None:
    with side_connection() as side:
        side.execute(
            f"UPDATE {ToolApproval._meta.db_table} SET deadline = now() + %s::interval", [when]
        )


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
