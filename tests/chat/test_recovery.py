from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.chain import GENESIS, link
from chat.models import Conversation, Message
from chat.turns import registry
from chat.turns.admission import TurnRejected, admit
from chat.turns.recovery import all_settled, dead_turns_recover, settle_given_up
from tests.support.rows import answer_feed_id

pytestmark = pytest.mark.django_db(transaction=True)


def stalled_turn(conversation, *, silent_for: float, beat_ago: float | None = None):
    """A streaming turn whose process went quiet `silent_for` seconds ago."""
    turn = admit(conversation=conversation, text="How do I negotiate my salary?")
    Message.objects.filter(pk=turn.answer.pk).update(content="Partial answer")
    long_ago = timezone.now() - timedelta(seconds=silent_for)
    ActivityEvent(feed=turn.answer.feed, seq=1, kind="status", icon="🔍", message="Looking up",
                  state="in_progress", created_at=long_ago).seal(GENESIS).save()  # fmt: skip
    heartbeat = timezone.now() - timedelta(seconds=beat_ago) if beat_ago is not None else None
    ActivityFeed.objects.filter(pk=answer_feed_id(turn.answer)).update(
        started_at=long_ago, heartbeat_at=heartbeat
    )
    return turn.answer


def test_a_turn_that_stopped_beating_is_interrupted_with_its_work_kept(alice_conversation):
    answer = stalled_turn(alice_conversation, silent_for=60)
    assert dead_turns_recover(conversation_id=alice_conversation.pk) == 1
    answer.refresh_from_db()
    assert answer.state == Message.State.INTERRUPTED
    assert answer.content == "Partial answer"
    feed = ActivityFeed.objects.get(pk=answer.feed_id)
    assert (feed.state, feed.summary_icon) == ("interrupted", "⚠️")
    lines = list(feed.events.order_by("seq").values_list("icon", "message"))
    assert lines == [("🔍", "Looking up"), ("⚠️", "Interrupted: the server stopped while working")]
    # The closing line is sealed after the last line the dead process wrote.
    first, last = feed.events.order_by("seq")
    assert last.chain == link(first.chain, last.sealed_values()) == feed.chain_head
    assert dead_turns_recover(conversation_id=alice_conversation.pk) == 0  # closed once


def test_an_old_turn_that_still_beats_is_left_running(alice_conversation):
    answer = stalled_turn(alice_conversation, silent_for=600, beat_ago=1)
    assert dead_turns_recover() == 0
    answer.refresh_from_db()
    assert answer.state == Message.State.STREAMING


def test_a_young_silent_turn_is_given_its_grace(alice_conversation):
    stalled_turn(alice_conversation, silent_for=2)
    assert dead_turns_recover() == 0


def test_opening_the_conversation_recovers_it(alice_client, alice_conversation):
    answer = stalled_turn(alice_conversation, silent_for=60)
    page = alice_client.get(alice_conversation.get_absolute_url()).content.decode()
    assert "state-interrupted" in page and "Partial answer" in page
    assert "Interrupted: the server stopped while working" in page
    answer.refresh_from_db()
    assert answer.state == Message.State.INTERRUPTED


def test_a_dead_turn_no_longer_blocks_a_new_question(alice_conversation):
    stalled_turn(alice_conversation, silent_for=60)
    turn = admit(conversation=alice_conversation, text="Still there?")
    assert turn.answer.state == Message.State.STREAMING


def test_a_live_turn_still_blocks_a_new_question(alice_conversation):
    stalled_turn(alice_conversation, silent_for=600, beat_ago=0.5)
    with pytest.raises(TurnRejected, match="still working"):
        admit(conversation=alice_conversation, text="second")


def test_a_recovered_turn_is_closed_in_the_language_it_was_asked_in(alice_conversation):
    answer = stalled_turn(alice_conversation, silent_for=60)
    ActivityFeed.objects.filter(pk=answer.feed_id).update(language="zh-hant")
    assert dead_turns_recover() == 1  # noticed by a process speaking English
    feed = ActivityFeed.objects.get(pk=answer.feed_id)
    assert feed.summary_text == "已中斷：伺服器在處理時停止"
    assert feed.events.order_by("-seq")[0].message == feed.summary_text


def test_turns_of_a_dead_process_stop_counting_against_the_limit(settings, alice):
    """After a restart nobody opens the conversations whose turns died: a new question must
    not be refused because of them."""
    settings.GLASSBOX_MAX_CONCURRENT_TURNS = 2
    for _ in range(2):
        turn = admit(conversation=Conversation.objects.create(owner=alice), text="Hi")
        long_ago = timezone.now() - timedelta(minutes=5)
        ActivityFeed.objects.filter(pk=answer_feed_id(turn.answer)).update(
            started_at=long_ago, heartbeat_at=long_ago
        )
    turn = admit(conversation=Conversation.objects.create(owner=alice), text="Still there?")
    assert turn.answer.state == Message.State.STREAMING
    assert Message.objects.filter(state=Message.State.INTERRUPTED).count() == 2


@dataclass
class HeldText:
    text: str


@dataclass
class HeldFeed:
    pending: list = field(default_factory=list)
    pending_calls: list = field(default_factory=list)
    last_seq: int = 1


async def settled_after_giving_up(answer: Message, held: str) -> None:
    """`answer`'s runner here gave up writing its end, holding `held` as its text: once its
    process has settled it, `answer` as the database has it, and nothing of it held here."""
    registry.text_started(answer.pk, HeldText(held), HeldFeed())
    try:
        settle_given_up(answer.pk, answer.conversation_id)
        async with asyncio.timeout(10):
            await all_settled()
        assert not registry.holds(answer.pk)
    finally:
        registry.released(answer.pk)
    await answer.arefresh_from_db()


@pytest.mark.asyncio
async def test_a_turn_given_up_here_is_closed_here_with_what_it_held_once_the_database_answers(
    settings, alice_conversation
):
    """Its runner could not write its end and nobody follows it here: the process itself
    closes it with the text it held (ahead of the database), not as an empty interruption
    left to another process, and holds nothing of it after."""
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.01
    answer = await sync_to_async(stalled_turn)(alice_conversation, silent_for=60)
    streaming = registry.texts_streaming()
    await settled_after_giving_up(answer, "Partial answer, and the rest")
    assert (answer.state, answer.content) == ("interrupted", "Partial answer, and the rest")
    assert registry.texts_streaming() == streaming  # its frames no longer widen others'


@pytest.mark.asyncio
async def test_a_turn_given_up_here_that_another_process_closed_is_let_go(
    settings, alice_conversation
):
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.01
    answer = await sync_to_async(stalled_turn)(alice_conversation, silent_for=60)
    assert await sync_to_async(dead_turns_recover)(conversation_id=alice_conversation.pk) == 1
    await settled_after_giving_up(answer, "Partial answer, and the rest")
    # As the other process closed it: nothing written over its close.
    assert (answer.state, answer.content) == ("interrupted", "Partial answer")


def test_a_recovery_rolled_back_keeps_what_was_held_here_for_the_next(
    alice_conversation, monkeypatch
):
    """The database away again as the turn is closed: the close is rolled back, and what
    this process held is still there for the next try, not lost with it."""
    from activity.writing import feeds

    answer = stalled_turn(alice_conversation, silent_for=60)
    registry.text_started(answer.pk, HeldText("Partial answer, and the rest"), HeldFeed())
    interrupt = feeds.interrupt

    def away_again(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    try:
        monkeypatch.setattr(feeds, "interrupt", away_again)
        with pytest.raises(OperationalError):
            dead_turns_recover(conversation_id=alice_conversation.pk)
        assert registry.holds(answer.pk)
        assert Message.objects.get(pk=answer.pk).state == "streaming"
        monkeypatch.setattr(feeds, "interrupt", interrupt)
        assert dead_turns_recover(conversation_id=alice_conversation.pk) == 1
        assert not registry.holds(answer.pk)
    finally:
        registry.released(answer.pk)
    answer.refresh_from_db()
    assert (answer.state, answer.content) == ("interrupted", "Partial answer, and the rest")
