"""Appending to a feed is one verb of activity (activity.writing.feeds.append): every
writer outside a running turn (a decision, a recovered turn's last lines, a contact request)
numbers after the feed's last event, seals after its head and moves its count and head the
same way, and two writers at once number one after the other."""

from __future__ import annotations

import pytest
from django.db import connection

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.chain import GENESIS, link
from activity.recording.events import Status
from activity.writing import feeds
from tests.support.audit import verify
from tests.support.lock_waits import second_waits_for_first
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def line(text: str) -> Status:
    return Status(icon="📨", message=text, state="done")


@pytest.fixture
def answered(alice_conversation, knowledge_base):
    return run_turn(alice_conversation, "How do I negotiate my salary?")


def chain_of(feed_id: int) -> list[ActivityEvent]:
    return list(ActivityEvent.objects.filter(feed_id=feed_id).order_by("seq"))


def test_appended_lines_follow_the_last_event_sealed_after_it_with_the_count_and_head_moved(
    answered,
):
    before = chain_of(answered.feed_id)

    appended = feeds.append(answered.feed_id, [line("One"), line("Two")])

    rows = chain_of(answered.feed_id)
    assert [event.seq for event in appended.events] == [before[-1].seq + 1, before[-1].seq + 2]
    assert [row.message for row in rows[-2:]] == ["One", "Two"]
    previous = GENESIS
    for row in rows:
        assert row.chain == link(previous, row.sealed_values())
        previous = row.chain
    feed = ActivityFeed.objects.get(pk=answered.feed_id)
    assert (
        (feed.event_count, feed.chain_head)
        == (len(rows), rows[-1].chain)
        == (
            len(before) + 2,
            appended.head,
        )
    )


def test_lines_are_numbered_above_seqs_a_dead_turn_may_have_shown(answered):
    last = chain_of(answered.feed_id)[-1].seq

    appended = feeds.append(answered.feed_id, [line("After the gap")], above=last + 10)

    assert appended.last_seq == last + 11
    assert ActivityFeed.objects.get(pk=answered.feed_id).seq_reserved >= last + 11


def test_a_line_appended_after_the_end_closes_the_feed_anew_and_it_verifies(answered):
    closing = ActivityFeed.objects.get(pk=answered.feed_id).closing

    feeds.append_late(answered.feed_id, line("Contact request sent"))

    assert ActivityFeed.objects.get(pk=answered.feed_id).closing not in ("", closing)
    assert verify()[0] == 0


def test_an_append_to_a_feed_that_is_not_there_is_refused_and_writes_nothing(answered):
    with pytest.raises(ActivityFeed.DoesNotExist):
        feeds.append(answered.feed_id + 1000, [line("Lost")])

    assert not ActivityEvent.objects.filter(message="Lost").exists()


def test_two_writers_at_once_number_one_after_the_other_and_the_feed_verifies(answered):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: nothing to meet")
    second_waits_for_first(
        # The second waits on the feed's row, locked by the first until it commits.
        lambda: feeds.append_late(answered.feed_id, line("First")),
        lambda: feeds.append_late(answered.feed_id, line("Second")),
    )

    rows = chain_of(answered.feed_id)
    assert [row.message for row in rows[-2:]] == ["First", "Second"]
    assert rows[-1].seq == rows[-2].seq + 1
    assert verify()[0] == 0
