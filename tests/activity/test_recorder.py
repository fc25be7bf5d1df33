"""A running turn shows its lines before it writes them, but never past the seq reserved on
disk: whoever closes it after a crash numbers the last line above the reservation."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.events import Status
from activity.writing.recorder import FeedRecorder
from chat.turns.admission import admit
from chat.turns.recovery import _interrupt
from tests.support import QUESTION

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_a_long_turn_never_numbers_a_line_past_its_reservation(alice_conversation):
    turn = await sync_to_async(admit)(conversation=alice_conversation, text=QUESTION)
    feed = turn.answer.answer_feed
    recorder = FeedRecorder(feed)
    reserved = ActivityFeed.objects.values_list("seq_reserved", flat=True)
    for n in range(100):
        line = await recorder.number(Status(icon="🛠️", message=f"Step {n}", state="done"))
        assert line.seq is not None and line.seq <= await reserved.aget(pk=feed.pk)
    # Numbering past the reservation wrote what was pending with it; the rest is pending.
    written = await ActivityEvent.objects.filter(feed=feed).acount()
    assert 0 < written < 100 and written + len(recorder.pending) == 100

    seq = await sync_to_async(_interrupt)(turn.answer, feed)
    assert seq is not None and seq > 100
