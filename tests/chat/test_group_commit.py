"""What a running turn has shown is on disk within the group commit's window, and one
commit carries every turn's rows without one turn's failure holding back another's; a
commit asks only the turns with something new for their share, a share that cannot be
taken holds back no other, and what a failed commit held is written by the next."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError

from activity.models import ActivityEvent
from activity.recording.events import Status
from activity.writing import commits
from activity.writing.recorder import FeedRecorder
from chat.models import Message
from chat.turns.admission import admit
from tests.support import QUESTION
from tests.support.sockets import ask, finish_turns, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# How long the polls below wait at most: far beyond the window, so a slow machine does not
# fail them; the window itself is measured by bench/crash_loss.py.
BOUND = 10


async def on_disk(answer_id: int) -> tuple[list[tuple[int, str]], str]:
    answer = await Message.objects.aget(pk=answer_id)
    lines = ActivityEvent.objects.filter(feed_id=answer.feed_id, kind="status").order_by("seq")
    return [(seq, message) async for seq, message in lines.values_list("seq", "message")], (
        answer.content
    )


async def test_the_lines_and_text_a_held_turn_showed_are_on_disk_within_the_commit_window(
    settings, gate, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_HEARTBEAT_SECONDS = 60  # no beat: only the group commit writes
    settings.GLASSBOX_COMMIT_SECONDS = 0.1
    held = gate(after=20, request=2)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, QUESTION)
    await held.reached.wait()
    shown: list[dict] = []
    # Everything the turn sent before it was held (text frames are coalesced for 30 ms).
    while not await socket.receive_nothing(timeout=0.3):
        shown.append(json.loads(await socket.receive_from()))
    lines = [(e["seq"], e["message"]) for e in shown if e["type"] == "status" and "seq" in e]
    text = "".join(e["content"] for e in shown if e["type"] == "text")
    assert len(lines) >= 3 and len(text) > 20
    answer_id = int(shown[0]["message_id"])

    async with asyncio.timeout(BOUND):
        while await on_disk(answer_id) != (lines, text):  # noqa: ASYNC110 - the database is polled
            await asyncio.sleep(settings.GLASSBOX_COMMIT_SECONDS / 2)
    held.open()
    events = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert events[-1]["state"] == "complete"


async def turn_recorder(conversation) -> FeedRecorder:
    turn = await sync_to_async(admit)(conversation=conversation, text=QUESTION)
    return FeedRecorder(turn.answer.answer_feed)


async def test_one_commit_writes_the_lines_of_every_running_turn(
    settings, monkeypatch, alice, alice_conversation, bob
):
    from chat.models import Conversation

    settings.GLASSBOX_COMMIT_SECONDS = 0.05
    other = await Conversation.objects.acreate(owner=bob, title="other")
    first, second = await turn_recorder(alice_conversation), await turn_recorder(other)
    batches: list[set[int]] = []
    write_all = commits._write_all

    def counted(parts):
        batches.append({part.recorder.feed.pk for part in parts})
        return write_all(parts)

    monkeypatch.setattr(commits, "_write_all", counted)
    first.join()
    second.join()
    try:
        for recorder in (first, second):
            await recorder.number(Status(icon="🔍", message="Searching…", state="in_progress"))
        async with asyncio.timeout(BOUND):
            while first.pending or second.pending:  # noqa: ASYNC110 - the timed commit is awaited
                await asyncio.sleep(0.01)
    finally:
        first.leave()
        second.leave()
    assert batches == [{first.feed.pk, second.feed.pk}]
    assert await ActivityEvent.objects.filter(seq=1).acount() == 2


async def test_a_turn_whose_write_fails_does_not_hold_back_another_turns_lines(
    settings, alice, alice_conversation, bob
):
    from chat.models import Conversation

    other = await Conversation.objects.acreate(owner=bob, title="other")
    failing, fine = await turn_recorder(alice_conversation), await turn_recorder(other)
    await fine.number(Status(icon="🔍", message="Searching…", state="in_progress"))
    await failing.number(Status(icon="🔍", message="Searching…", state="in_progress"))

    def broken() -> None:
        raise ValueError("a bad row")

    refused = failing.write(broken)
    written = fine.write()
    with pytest.raises(ValueError, match="a bad row"):
        await refused
    await written
    assert not fine.pending and len(failing.pending) == 1
    on_disk = ActivityEvent.objects.values_list("feed_id", flat=True)
    assert [feed async for feed in on_disk] == [fine.feed.pk]


class Counted:
    """A running turn with nothing new, counting how often the writer asks for its share."""

    def __init__(self, feed) -> None:
        self.feed = feed
        self.asked = 0

    def take(self) -> commits.Part:
        self.asked += 1
        return commits.Part(self, [], [], None, [])

    def written(self, part: commits.Part) -> None:
        pass


async def test_a_turns_write_asks_none_of_the_other_running_turns_for_their_share(
    settings, alice, alice_conversation
):
    settings.GLASSBOX_COMMIT_SECONDS = 60  # only the writes asked for at once
    writer = commits.GroupCommit()
    asking = await turn_recorder(alice_conversation)
    others = [Counted(asking.feed) for _ in range(100)]
    for other in others:
        writer.join(other)
    try:
        await writer.write(asking, None, at_once=True)  # each joined turn's first share
        assert {other.asked for other in others} == {1}
        for _ in range(3):  # a tool call's write-ahead, a pause, an end...
            await writer.write(asking, None, at_once=True)
        assert {other.asked for other in others} == {1}
        writer.touch(others[7])  # one of them has something new
        await writer.write(asking, None, at_once=True)
        assert [other.asked for other in others].count(2) == 1 and others[7].asked == 2
    finally:
        for other in others:
            writer.leave(other)
        assert writer.task is not None
        writer.task.cancel()


class Broken(Counted):
    def take(self) -> commits.Part:
        raise RuntimeError("a share that cannot be taken")


async def test_a_share_that_cannot_be_taken_holds_back_no_other_turns_write(
    settings, alice, alice_conversation
):
    settings.GLASSBOX_COMMIT_SECONDS = 60
    writer = commits.GroupCommit()
    asking = await turn_recorder(alice_conversation)
    broken, other = Broken(asking.feed), Counted(asking.feed)
    writer.join(broken)
    writer.join(other)
    try:
        refused = writer.write(broken, None, at_once=True)
        written = writer.write(asking, None, at_once=True)
        with pytest.raises(RuntimeError, match="cannot be taken"):
            await refused
        await written
        assert other.asked == 1
        writer.touch(other)
        await writer.write(asking, None, at_once=True)  # the writer still runs
        assert other.asked == 2
    finally:
        writer.leave(broken)
        writer.leave(other)
        assert writer.task is not None
        writer.task.cancel()


async def test_what_a_failed_commit_held_is_written_by_the_next_unasked(
    settings, monkeypatch, alice, alice_conversation
):
    settings.GLASSBOX_COMMIT_SECONDS = 0.05
    recorder = await turn_recorder(alice_conversation)
    write_all = commits._write_all
    failures = [OperationalError("the database is away")]

    def once_away(parts):
        if failures:
            raise failures.pop()
        return write_all(parts)

    monkeypatch.setattr(commits, "_write_all", once_away)
    recorder.join()
    try:
        await recorder.number(Status(icon="🔍", message="Searching…", state="in_progress"))
        async with asyncio.timeout(BOUND):
            while recorder.pending:  # noqa: ASYNC110 - the timed commits are awaited
                await asyncio.sleep(0.01)
    finally:
        recorder.leave()
    assert not failures  # the first commit failed, a later one wrote the line
    assert await ActivityEvent.objects.filter(feed_id=recorder.feed.pk).acount() == 1


@pytest.mark.parametrize("first", ["turn", "writer"])
async def test_a_loop_that_closes_mid_turn_ends_whichever_task_it_cancels_first(
    gate, alice, alice_conversation, first
):
    held = gate(after=1)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, QUESTION)
    await held.reached.wait()
    named = {task.get_name(): task for task in asyncio.all_tasks()}
    (turn,) = [task for name, task in named.items() if name.startswith("turn-")]
    writer = named["group-commit"]

    # As a closing loop does (asyncio.Runner.close), in the order its set of tasks gives.
    order = [turn, writer] if first == "turn" else [writer, turn]
    for task in order:
        task.cancel()
    _done, pending = await asyncio.wait(order, timeout=BOUND)

    assert not pending, "a cancelled turn waited for a writer that was gone"
    await finish_turns()
    await socket.disconnect()
