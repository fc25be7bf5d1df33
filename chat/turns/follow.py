"""Following one turn for a socket or an SSE stream: nothing shown twice, nothing skipped,
nothing out of order, and an end for every turn.

The channel layer may drop messages to a slow reader (channels-redis drops silently at a full
channel), so a gap is filled: a status or tool event is broadcast with the events before it
that are not written yet (they are written in batches, activity.writing.recorder), and
every event before those is in the database; a missing stretch of answer text comes from the
running process's buffer or the stored text, or, if neither has it yet, from the finished
answer just before `done` (which also brings any text lost at the very end). A turn that goes
quiet is looked up in the database: a `done` that was dropped is found there, and a runner
that died is recovered (chat.turns.recovery). A read the database cannot answer (a restart, a
failover) is tried again for as long as the turn may still end, so `done` follows its return."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, assert_never

from channels.db import database_sync_to_async
from django.conf import settings

from activity.models import ActivityEvent
from activity.preferences.feed_prefs import FeedPrefs
from activity.recording.events import (
    AppNote,
    AppView,
    Decision,
    Done,
    Error,
    Plan,
    RecordedEvent,
    Score,
    Status,
    TextDelta,
    ToolCall,
    ToolFeedback,
    ToolLog,
    ToolResult,
    TurnStarted,
    WireEvent,
    from_json,
    turn_state,
)
from chat.conversations.selectors import TurnView, aturn_view
from chat.models import Message
from chat.turns import registry
from chat.turns.feedback import feedback_of, with_feedback
from chat.turns.recovery import dead_turns_recover, quiet_seconds
from project.outages import while_down

logger = logging.getLogger("glassbox.turns")


class Inbox(Protocol):
    """Where the conversation group's messages arrive for one follower."""

    async def get(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Position:
    """How much of a turn a follower has: the last event's seq and the text's length."""

    seq: int = 0
    text: int = 0
    # The calls whose tool_feedback it has (a live-only event, so not counted by seq).
    feedback: frozenset[str] = frozenset()


async def snapshot(answer_id: int, prefs: FeedPrefs | None = None) -> tuple[TurnView, Position]:
    """The turn as stored, with the text and events this process holds ahead of the
    database, and the position to follow it from."""
    pending = functools.partial(registry.unsaved_rows, answer_id)
    view = await aturn_view(answer_id, prefs or FeedPrefs(), pending)
    # No wait since the pending events were taken: the text is from the same moment.
    view = dataclasses.replace(view, content=registry.text_so_far(answer_id, view.content))
    last = view.events[-1].seq if view.events else 0
    given = frozenset(feedback_of(view.events))
    return view, Position(seq=last or 0, text=len(view.content), feedback=given)


def replay(view: TurnView) -> list[WireEvent]:
    """A snapshot as the events a follower that joins now has missed: `turn`, what is
    recorded, the text so far, the last progress of each call still running (in this
    process), and `done` if the turn is already over."""
    events: list[WireEvent] = [TurnStarted(str(view.question_id), str(view.pk))]
    events += with_feedback(view.events)
    if view.content:
        events.append(TextDelta(view.content))
    if view.state in Message.OPEN_STATES:
        # After the text: numbered where the stream has got to, so a reader that resumes
        # anywhere up to there is sent it (wires.Frame.in_place).
        events += registry.progress_so_far(view.pk)
    else:
        feed = view.feed
        icon, text = (feed.summary_icon, feed.summary_text) if feed else ("", "")
        events.append(Done(str(view.pk), turn_state(view.state), icon, text))
    return events


async def follow_turn(
    answer_id: int,
    inbox: Inbox,
    *,
    conversation_id: uuid.UUID,
    after: Position = Position(),
) -> AsyncIterator[WireEvent]:
    """The events of one turn, from `after` up to and including `done`: decoded once, as
    their group message is admitted here."""
    # Whoever follows a turn may follow one that waits: this process keeps the deadlines.
    # (Imported here: resuming imports the runner, which imports this module's package.)
    from chat.turns import resuming

    resuming.watch()
    gaps = _Gaps(answer_id, after)
    quiet = quiet_seconds()
    while True:
        try:
            async with asyncio.timeout(quiet):
                message = await inbox.get()
        except TimeoutError:
            if not registry.runs_here(answer_id):
                recover = functools.partial(dead_turns_recover, conversation_id=conversation_id)
                await read_again(answer_id, recover)
            events = await gaps.ended()
        else:
            if message.get("type") != "turn.event" or message.get("answer_id") != answer_id:
                continue
            events = await gaps.admit(message)
        for event in events:
            yield event
            if isinstance(event, Done):
                return


async def read_again[T](answer_id: int, read: Callable[[], T]) -> T:
    """`read()` in the database thread, tried again while the database is unreachable: for
    as long as the turn may still end (its runner tries its end as long, see
    chat.turns.runner), 0.2 s doubling to 2 s between tries. Each try starts with a
    connection that works or a new one (database_sync_to_async drops a broken one)."""

    def failed(wait: float, first: bool) -> None:
        logger.warning(
            "a follower of turn %s could not read it; trying again in %.2f s",
            answer_id,
            wait,
            exc_info=first,
        )

    return await while_down(
        database_sync_to_async(read),
        first=0.2,
        most=2.0,
        for_seconds=settings.GLASSBOX_TURN_TIMEOUT,
        failed=failed,
    )


class _Gaps:
    """What one follower has of one turn, and the database reads that fill what it missed."""

    def __init__(self, answer_id: int, position: Position) -> None:
        self.answer_id = answer_id
        self.seq = position.seq
        self.text = position.text
        self.text_gap = False
        self.finished = False
        self.feedback = set(position.feedback)

    async def admit(self, message: dict[str, Any]) -> list[WireEvent]:
        """The events of a `turn.event` group message as this follower should get them, in
        order: none if already seen, several if a gap was filled first. The one place a
        group message's JSON becomes events."""
        event = from_json(message["event"])
        unsaved = [_recorded(from_json(data)) for data in message.get("unsaved", ())]
        return await self.taken(event, message, unsaved)

    async def taken(
        self, event: WireEvent, message: dict[str, Any], unsaved: list[RecordedEvent]
    ) -> list[WireEvent]:
        match event:
            case TextDelta():
                return await self._text(message.get("offset", 0), event.content)
            case Done():
                return await self._done(event, message.get("written"))
            case ToolFeedback():
                # Live only: given once, whether the snapshot or the group brought it first.
                if self.finished or event.call_id in self.feedback:
                    return []
                self.feedback.add(event.call_id)
                return [event]
            case Status() if event.seq is None:
                # A tool's progress: live only, and the next one supersedes it.
                return [] if self.finished else [event]
            case (
                Status()
                | ToolCall()
                | ToolResult()
                | Decision()
                | Plan()
                | ToolLog()
                | Score()
                | AppView()
                | AppNote()
            ):
                return self._with_feedback(await self._numbered(event, unsaved))
            case TurnStarted() | Error():
                return [event]
            case _:
                assert_never(event)

    def _with_feedback(self, events: Sequence[WireEvent]) -> list[WireEvent]:
        """The events with the feedback of each call among them that this follower never had:
        it joined after its live tool_feedback and before its call was recorded."""
        out: list[WireEvent] = []
        for event in events:
            if isinstance(event, ToolCall) and event.call_id not in self.feedback:
                for call_id, feedback in feedback_of([event]).items():
                    self.feedback.add(call_id)
                    out.append(ToolFeedback(call_id, feedback))
            out.append(event)
        return out

    async def _done(self, event: Done, written: dict[str, int | None] | None) -> list[WireEvent]:
        if self.finished:
            return []
        self.finished = True
        # Everything is written before `done` goes out: whatever never arrived comes now.
        written = written or {"seq": None, "text": None}
        lines: list[WireEvent] = []
        seq, text = written.get("seq"), written.get("text")
        if seq is None or seq > self.seq:
            recorded = await self._recorded(after=self.seq, before=None)
            if recorded:
                self.seq = recorded[-1].seq or self.seq
            lines += self._with_feedback(recorded)
        if text is None or text > self.text or self.text_gap:
            lines += await self._missing_text_at_end()
        return [*lines, event]

    async def _numbered(
        self, event: RecordedEvent, unsaved: list[RecordedEvent]
    ) -> list[WireEvent]:
        seq = event.seq or 0
        if seq <= self.seq:
            return []
        events: list[WireEvent] = []
        if seq > self.seq + 1:
            ahead = [e for e in unsaved if (e.seq or 0) > self.seq]
            first = (ahead[0].seq or 0) if ahead else seq
            if first > self.seq + 1:
                events += await self._recorded(after=self.seq, before=first)
            events += ahead
        self.seq = seq
        return [*events, event]

    async def ended(self) -> list[WireEvent]:
        """The end of a turn whose `done` never arrived, as stored; [] while it runs."""
        if self.finished:
            return []

        def end() -> tuple[str, str, str] | None:
            return (
                Message.objects.filter(pk=self.answer_id)
                .exclude(state__in=Message.OPEN_STATES)
                .values_list("state", "feed__summary_icon", "feed__summary_text")
                .first()
            )

        row = await read_again(self.answer_id, end)
        if row is None:
            return []
        state, icon, text = row
        done = Done(str(self.answer_id), turn_state(state), icon, text)
        return await self.taken(done, {"answer_id": self.answer_id}, [])

    async def _text(self, offset: int, content: str) -> list[WireEvent]:
        end = offset + len(content)
        if end <= self.text or self.text_gap:
            return []
        if offset > self.text:
            known = await self._text_so_far()
            if len(known) < offset:
                self.text_gap = True  # filled from the finished answer at `done`
                return []
            content, offset = known[self.text : offset] + content, self.text
        seen, self.text = self.text, end
        return [TextDelta(content[seen - offset :])]

    async def _missing_text_at_end(self) -> list[WireEvent]:
        """Whatever text never arrived (a gap, or frames lost at the very end)."""
        content = await read_again(self.answer_id, self._stored_text)
        self.text_gap = False
        rest = content[self.text :]
        return [TextDelta(rest)] if rest else []

    async def _recorded(self, *, after: int, before: int | None) -> list[RecordedEvent]:
        def rows() -> list[RecordedEvent]:
            feed_id = Message.objects.values_list("feed_id", flat=True).get(pk=self.answer_id)
            found = ActivityEvent.objects.filter(feed_id=feed_id, seq__gt=after)
            if before is not None:
                found = found.filter(seq__lt=before)
            return [row.to_event() for row in found.order_by("seq")]

        return await read_again(self.answer_id, rows)

    async def _text_so_far(self) -> str:
        stored = await read_again(self.answer_id, self._stored_text)
        return registry.text_so_far(self.answer_id, stored)

    def _stored_text(self) -> str:
        return Message.objects.values_list("content", flat=True).get(pk=self.answer_id)


def _recorded(event: WireEvent) -> RecordedEvent:
    """An `unsaved` event of a group message: recorded kinds only."""
    match event:
        case (
            Status()
            | ToolCall()
            | ToolResult()
            | Decision()
            | Plan()
            | ToolLog()
            | Score()
            | AppView()
            | AppNote()
        ):
            return event
        case TextDelta() | Done() | TurnStarted() | Error() | ToolFeedback():
            raise ValueError(f"not a recorded event: {event!r}")
        case _:
            assert_never(event)
