"""Following one turn for a socket or an SSE stream: nothing shown twice, nothing skipped,
nothing out of order, and an end for every turn.

The channel layer may drop messages to a slow reader (channels-redis drops silently at a full
channel), so a gap is filled: a status or tool event is broadcast with the events before it
that are not written yet (they are written in batches, activity.recording.recorder), and
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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.conf import settings

from activity.models import ActivityEvent
from activity.preferences.feed_prefs import FeedPrefs
from activity.recording.events import Done, TextDelta, TurnStarted, to_json, turn_state
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
    given = frozenset(feedback_of([to_json(event) for event in view.events]))
    return view, Position(seq=last or 0, text=len(view.content), feedback=given)


def replay(view: TurnView) -> list[dict[str, Any]]:
    """A snapshot as the events a follower that joins now has missed: `turn`, what is
    recorded, the text so far, and `done` if the turn is already over."""
    events = [to_json(TurnStarted(str(view.question_id), str(view.pk)))]
    events += with_feedback([to_json(event) for event in view.events])
    if view.content:
        events.append(to_json(TextDelta(view.content)))
    if view.state not in Message.OPEN_STATES:
        feed = view.feed
        icon, text = (feed.summary_icon, feed.summary_text) if feed else ("", "")
        events.append(to_json(Done(str(view.pk), turn_state(view.state), icon, text)))
    return events


async def follow_turn(
    answer_id: int,
    inbox: Inbox,
    *,
    conversation_id: uuid.UUID,
    after: Position = Position(),
) -> AsyncIterator[dict[str, Any]]:
    """The events of one turn in their JSON form, from `after` up to and including `done`."""
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
            if event["type"] == "done":
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

    async def admit(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The events of a `turn.event` group message as this follower should get them, in
        order: none if already seen, several if a gap was filled first."""
        event = message["event"]
        if event["type"] == "text":
            return await self._text(message.get("offset", 0), event["content"])
        if event["type"] == "done":
            if self.finished:
                return []
            self.finished = True
            # Everything is written before `done` goes out: whatever never arrived comes now.
            written = message.get("written", {"seq": None, "text": None})
            lines = []
            if written["seq"] is None or written["seq"] > self.seq:
                lines = await self._recorded(after=self.seq, before=None)
            if lines:
                self.seq = lines[-1]["seq"]
            rest = []
            if written["text"] is None or written["text"] > self.text or self.text_gap:
                rest = await self._missing_text_at_end()
            return [*lines, *rest, event]
        if event["type"] == "tool_feedback":
            # Live only: given once, whether the snapshot or the group brought it first.
            if self.finished or event["call_id"] in self.feedback:
                return []
            self.feedback.add(event["call_id"])
            return [event]
        if "seq" not in event:
            # A tool's progress: live only, and the next one supersedes it.
            return [] if self.finished else [event]
        if event["seq"] <= self.seq:
            return []
        events = []
        if event["seq"] > self.seq + 1:
            unsaved = [e for e in message.get("unsaved", ()) if e["seq"] > self.seq]
            first = unsaved[0]["seq"] if unsaved else event["seq"]
            if first > self.seq + 1:
                events = await self._recorded(after=self.seq, before=first)
            events += unsaved
        self.seq = event["seq"]
        return [*events, event]

    async def ended(self) -> list[dict[str, Any]]:
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
        done = to_json(Done(str(self.answer_id), turn_state(state), icon, text))
        return await self.admit({"answer_id": self.answer_id, "event": done})

    async def _text(self, offset: int, content: str) -> list[dict[str, Any]]:
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
        return [{"type": "text", "content": content[seen - offset :]}]

    async def _missing_text_at_end(self) -> list[dict[str, Any]]:
        """Whatever text never arrived (a gap, or frames lost at the very end)."""
        content = await read_again(self.answer_id, self._stored_text)
        self.text_gap = False
        rest = content[self.text :]
        return [{"type": "text", "content": rest}] if rest else []

    async def _recorded(self, *, after: int, before: int | None) -> list[dict[str, Any]]:
        def rows() -> list[dict[str, Any]]:
            feed_id = Message.objects.values_list("feed_id", flat=True).get(pk=self.answer_id)
            found = ActivityEvent.objects.filter(feed_id=feed_id, seq__gt=after)
            if before is not None:
                found = found.filter(seq__lt=before)
            return [to_json(row.to_event()) for row in found.order_by("seq")]

        return await read_again(self.answer_id, rows)

    async def _text_so_far(self) -> str:
        stored = await read_again(self.answer_id, self._stored_text)
        return registry.text_so_far(self.answer_id, stored)

    def _stored_text(self) -> str:
        return Message.objects.values_list("content", flat=True).get(pk=self.answer_id)
