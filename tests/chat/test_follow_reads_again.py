"""A follower's database read that fails (a restart, a failover) is tried again, 0.2 s
doubling to 2 s, for as long as the turn may still end; then the failure is its caller's.
The failures are real: the read runs on a database that refuses connections."""

from __future__ import annotations

import asyncio
import logging

import pytest
from django.db import OperationalError

from chat.models import Message
from chat.turns.follow import read_again
from tests.support.outages import database_refusing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def failing_first(times: int, answer_id: int):
    """A read of the answer's text whose first `times` tries meet a refusing database."""
    tries = []

    def read() -> str:
        tries.append(1)
        if len(tries) <= times:
            with database_refusing():
                return Message.objects.values_list("content", flat=True).get(pk=answer_id)
        return Message.objects.values_list("content", flat=True).get(pk=answer_id)

    return read, tries


async def answer_of(conversation) -> Message:
    return await Message.objects.acreate(
        conversation=conversation, role="assistant", content="Kept.", state="streaming"
    )


async def test_a_read_that_fails_twice_is_answered_on_the_third_try(caplog, alice_conversation):
    answer = await answer_of(alice_conversation)
    read, tries = failing_first(2, answer.pk)
    caplog.set_level(logging.WARNING, logger="glassbox.turns")
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await read_again(answer.pk, read) == "Kept."
    # 0.2 s, then 0.4 s between the tries.
    assert len(tries) == 3 and 0.6 <= loop.time() - started < 3
    waits = [r.getMessage() for r in caplog.records if "could not read it" in r.getMessage()]
    assert [w.rsplit("in ", 1)[1] for w in waits] == ["0.20 s", "0.40 s"]


async def test_a_read_that_keeps_failing_fails_once_the_turn_could_no_longer_end(
    settings, alice_conversation
):
    settings.GLASSBOX_TURN_TIMEOUT = 1  # how long a turn's end is tried, and a read
    answer = await answer_of(alice_conversation)
    read, tries = failing_first(100, answer.pk)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(OperationalError):
        await read_again(answer.pk, read)
    # Tried at 0, 0.2 and 0.6 s; the next (1.4 s) would start after the turn's timeout.
    assert len(tries) == 3 and loop.time() - started < 3
