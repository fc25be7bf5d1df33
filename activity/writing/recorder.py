"""Writes one turn's feed: its events and its requests to the model, through the process's
group commit (activity.writing.commits).

An event is numbered and shown at once, and written with everything else pending, of this
turn and every other, at the next group commit (every GLASSBOX_COMMIT_SECONDS), or at once
when the turn asks (a tool call before its tool runs, a pause, its end before `done` goes
out). A crash loses at most one commit window of events and text. Until they are written,
the pending events travel with each line that is broadcast (`unsaved()`), so no follower
ever misses one.

A turn numbers at most `SEQ_AHEAD` events past the reservation on disk
(`ActivityFeed.seq_reserved`); a write extends it as the turn nears it. Whoever closes the
turn after a crash numbers its last line above the reservation, so that line never takes the
seq of one that was shown and lost with the process."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.utils import timezone

from activity.models import SEQ_AHEAD, ActivityEvent, ActivityFeed, ModelCall
from activity.presenting.presentation import Summary, refused_calls
from activity.recording.chain import CLOSED_CALL_FIELDS, GENESIS, closing, text_digest
from activity.recording.events import ModelCallDone, RecordedEvent, ToolCall, ToolResult, with_seq
from activity.usage import ModelPrice, call_cost, totals
from activity.writing.commits import GroupCommit, Part, Rider, group_commit
from activity.writing.feeds import sealed_rows

# The places of a feed's `cost` column.
COST_PLACES = Decimal("0.000001")


class FeedRecorder:
    """The single writer of one feed; seq is counted here, the unique index guards it."""

    def __init__(self, feed: ActivityFeed, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.feed = feed
        self.events: list[RecordedEvent] = []
        self.calls: list[ModelCallDone] = []
        self.prices = prices or {}
        # The hash of the last numbered event: each new one is sealed after it.
        self.head = GENESIS
        # Not yet committed, in order; a write takes a prefix, and drops it once committed.
        self.pending: list[ActivityEvent] = []
        self.pending_calls: list[ModelCall] = []
        # Rows the turn keeps up to date (its answer text), written with each commit.
        self.riders: list[Rider] = []
        # The group commit it has joined, told of each new thing to write.
        self.writer: GroupCommit | None = None

    def join(self, *riders: Rider) -> None:
        """From now on what is pending is written at each group commit, with `riders`."""
        self.riders += riders
        self.writer = group_commit()
        self.writer.join(self)

    def leave(self) -> None:
        """The turn writes its rows itself from now on (its pause, its end)."""
        self.riders = []
        if self.writer is not None:
            self.writer.leave(self)
            self.writer = None

    def touch(self) -> None:
        """Something new to write (an event, a model call, a rider's change): taken by the
        next group commit, if the turn has joined one."""
        if self.writer is not None:
            self.writer.touch(self)

    async def load(self) -> None:
        """What a paused turn recorded before, so a resumed run numbers on and sums it all."""
        rows = [row async for row in ActivityEvent.objects.filter(feed=self.feed).order_by("seq")]
        self.events = [row.to_event() for row in rows]
        self.head = rows[-1].chain if rows else GENESIS
        calls = ModelCall.objects.filter(feed=self.feed).order_by("round")
        self.calls = [call.done() async for call in calls]

    @property
    def last_seq(self) -> int:
        return (self.events[-1].seq or 0) if self.events else 0

    async def number(self, event: RecordedEvent) -> RecordedEvent:
        """The event with its seq, pending until the next write (at once if its seq is past
        the reservation: the write extends it)."""
        if self.last_seq + 1 > self.feed.seq_reserved:
            await self.write()
        (row,) = sealed_rows(self.feed, [event], self.last_seq + 1, self.head)
        numbered = with_seq(event, row.seq)
        self.events.append(numbered)
        self.head = row.chain
        self.pending.append(row)
        self.touch()
        return numbered

    def unsaved(self, before: int) -> list[RecordedEvent]:
        """The pending events numbered before `before`."""
        return [row.to_event() for row in self.pending if row.seq < before]

    def add_call(self, call: ModelCallDone) -> None:
        self.calls.append(call)
        self.pending_calls.append(
            ModelCall(
                feed=self.feed,
                round=call.round,
                model=call.model[:100],
                duration_ms=call.duration_ms,
                thinking_ms=call.thinking_ms,
                reasoning=call.reasoning,
                prompt_tokens=call.prompt_tokens,
                completion_tokens=call.completion_tokens,
                reasoning_tokens=call.reasoning_tokens,
                cached_tokens=call.cached_tokens,
                cost=call_cost(call, self.prices),
                error_type=call.error_type[:100],
                tools_offered=list(call.tools_offered),
            )
        )
        self.touch()

    def write[T](
        self, also: Callable[[], T] | None = None, *, at_once: bool = True
    ) -> asyncio.Future[T | None]:
        """Writes what is pending, and whatever `also` writes, in one transaction in the
        database thread (at once, or with the next group commit); returns what `also`
        returns. A write is never abandoned halfway by a cancelled caller: its rows would be
        written twice."""
        return asyncio.shield(group_commit().write(self, also, at_once))

    def take(self) -> Part:
        """What is pending now, for the group commit (activity.writing.commits)."""
        # Extended once half of it is used: a short turn never writes it at all.
        reserve: int | None = self.last_seq + SEQ_AHEAD
        if self.last_seq + SEQ_AHEAD // 2 < self.feed.seq_reserved:
            reserve = None
        rides = [ride for rider in self.riders if (ride := rider.ride()) is not None]
        return Part(self, self.pending[:], self.pending_calls[:], reserve, rides)

    def written(self, part: Part) -> None:
        """`part` is on disk."""
        del self.pending[: len(part.events)]
        del self.pending_calls[: len(part.calls)]
        if part.reserve is not None:
            self.feed.seq_reserved = max(self.feed.seq_reserved, part.reserve)

    def finished(self, state: str, summary: Summary | None, answer: str) -> dict[str, Any]:
        """The feed's fields once the turn has ended with the text `answer`, closed: its
        `closing` seals them with the head, the model calls and the text's SHA-256 (write
        them with ActivityFeed.close)."""
        calls = [e for e in self.events if isinstance(e, ToolCall)]
        refused = refused_calls(self.events)
        failures = [
            e
            for e in self.events
            if isinstance(e, ToolResult) and not e.ok and e.call_id not in refused
        ]
        usage = totals(self.calls, self.prices)
        usage["model"] = usage["model"][:100]
        if usage["cost"] is not None:
            # As the column keeps it, so the closing seals what is stored.
            usage["cost"] = usage["cost"].quantize(COST_PLACES, rounding=ROUND_HALF_UP)
        fields = {
            **usage,
            "state": state,
            "summary_icon": summary.icon if summary else "",
            "summary_text": summary.text if summary else "",
            "finished_at": timezone.now(),
            "event_count": len(self.events),
            "chain_head": self.head,
            "tool_call_count": len(calls),
            "failed_tool_count": len(failures),
            "answer_sha256": text_digest(answer),
        }
        feed = self.feed
        stored = {
            "id": feed.pk,
            "owner_id": feed.owner_id,
            "conversation_id": feed.conversation_id,
            "started_at": feed.started_at,
            "language": feed.language,
        }
        model_calls = [
            {name: getattr(call, name) for name in CLOSED_CALL_FIELDS}
            | {"model": call.model[:100]}
            # In the order the audit reads them back: a call an MCP server asked for
            # mid-round is numbered after the turn's own rounds.
            for call in sorted(self.calls, key=lambda call: call.round)
        ]
        return fields | {"closing": closing(stored | fields, model_calls)}
