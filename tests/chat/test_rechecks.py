"""Quiet sockets' periodic checks of their rights share their trips to the database thread
(chat.socket.rechecks), and each socket still gets its own answer: the one whose right went is
closed, the others stay open."""

from __future__ import annotations

import asyncio
import logging

import pytest
from asgiref.sync import sync_to_async
from django.contrib.sessions.models import Session
from django.db import connection

from chat.models import Conversation
from chat.socket.reads import NotAllowed, Permit, Refused
from chat.socket.rechecks import Rechecks
from tests.support.revocation import browser_of, closed_with, silent_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_checks_asked_together_take_one_trip_and_each_gets_its_own_answer(
    alice, bob, alice_conversation
):
    browser, _cookie = await browser_of(alice)
    key = browser.session.session_key
    not_hers = await Conversation.objects.acreate(owner=bob)
    permits = [
        *(Permit(key, alice.pk, alice_conversation.pk) for _ in range(50)),
        Permit(key, alice.pk, not_hers.pk),
        Permit("a-session-that-ended", alice.pk, alice_conversation.pk),
    ]
    checks = Rechecks()

    outcomes = await asyncio.gather(*(checks.check(p) for p in permits), return_exceptions=True)

    assert checks.trips == 1
    assert outcomes[:50] == [None] * 50
    refused = outcomes[50:]
    assert all(isinstance(outcome, NotAllowed) for outcome in refused)
    assert [outcome.reason for outcome in refused] == [Refused.CONVERSATION, Refused.SESSION]  # type: ignore[union-attr]


async def test_of_many_quiet_sockets_checking_on_their_clocks_the_one_that_lost_its_right_closes(
    alice, bob, settings
):
    settings.GLASSBOX_SOCKET_RECHECK_SECONDS = 0.2
    _browser, cookie = await browser_of(alice)
    moved = await Conversation.objects.acreate(owner=alice)
    # Each on a conversation of its own: a socket hears its conversation's other turns.
    staying = [
        await silent_socket(await Conversation.objects.acreate(owner=alice), cookie)
        for _ in range(5)
    ]
    leaving = await silent_socket(moved, cookie)

    # No signal: only the socket's own periodic check can find it.
    await Conversation.objects.filter(pk=moved.pk).aupdate(owner=bob)

    assert await closed_with(leaving, 4404)
    for socket in staying:
        assert await socket.receive_nothing(timeout=0.5)


async def test_a_check_the_database_cannot_answer_closes_nothing_and_the_checks_go_on(
    alice, bob, settings
):
    settings.GLASSBOX_SOCKET_RECHECK_SECONDS = 0.2
    _browser, cookie = await browser_of(alice)
    conversation = await Conversation.objects.acreate(owner=alice)
    socket = await silent_socket(conversation, cookie)
    unmade = Said("could not be made")
    logging.getLogger("glassbox.sockets").addHandler(unmade)

    # The sessions' table out of reach: each check fails with a real database error.
    await rename_table(Session._meta.db_table, "sessions_away")
    try:
        await asyncio.wait_for(unmade.wait(), 10)
        assert await socket.receive_nothing(timeout=0.5)  # still open, shown nothing
    finally:
        await rename_table("sessions_away", Session._meta.db_table)
        logging.getLogger("glassbox.sockets").removeHandler(unmade)

    await Conversation.objects.filter(pk=conversation.pk).aupdate(owner=bob)
    assert await closed_with(socket, 4404)


class Said(logging.Handler):
    """Set once a line containing `words` is logged (on the event loop's thread)."""

    def __init__(self, words: str) -> None:
        super().__init__(logging.WARNING)
        self.words, self.seen = words, asyncio.Event()
        self.wait = self.seen.wait

    def emit(self, record: logging.LogRecord) -> None:
        if self.words in record.getMessage():
            self.seen.set()


@sync_to_async
def rename_table(old: str, new: str) -> None:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {quote(old)} RENAME TO {quote(new)}")
