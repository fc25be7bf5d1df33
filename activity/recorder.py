"""Writes one turn's events as they happen: one INSERT per status or tool event, one per
request to the model (its usage and reasoning), nothing per text token, and one UPDATE of the
feed when the turn ends."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils import timezone

from activity.events import ModelCallDone, RecordedEvent, ToolCall, ToolResult, with_seq
from activity.models import ActivityEvent, ActivityFeed, ModelCall
from activity.presentation import Summary
from activity.usage import ModelPrice, call_cost, totals


class FeedRecorder:
    """The single writer of one feed; seq is counted here, the unique index guards it."""

    def __init__(self, feed: ActivityFeed, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.feed = feed
        self.events: list[RecordedEvent] = []
        self.calls: list[ModelCallDone] = []
        self.prices = prices or {}

    async def load(self) -> None:
        """What a paused turn recorded before, so a resumed run numbers on and sums it all."""
        rows = ActivityEvent.objects.filter(feed=self.feed).order_by("seq")
        self.events = [row.to_event() async for row in rows]
        calls = ModelCall.objects.filter(feed=self.feed).order_by("round")
        self.calls = [call.done() async for call in calls]

    @property
    def last_seq(self) -> int:
        return (self.events[-1].seq or 0) if self.events else 0

    def number(self, event: RecordedEvent) -> RecordedEvent:
        """The event with its seq, counted here; call save() before numbering the next."""
        numbered = with_seq(event, self.last_seq + 1)
        self.events.append(numbered)
        return numbered

    async def save(self, numbered: RecordedEvent) -> None:
        await ActivityEvent.from_event(self.feed, numbered).asave()

    async def save_call(self, call: ModelCallDone) -> None:
        self.calls.append(call)
        await ModelCall.objects.acreate(
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
        )

    async def finish(self, state: str, summary: Summary | None) -> None:
        calls = [e for e in self.events if isinstance(e, ToolCall)]
        failures = [e for e in self.events if isinstance(e, ToolResult) and not e.ok]
        usage = totals(self.calls, self.prices)
        usage["model"] = usage["model"][:100]
        await ActivityFeed.objects.filter(pk=self.feed.pk).aupdate(
            **usage,
            state=state,
            summary_icon=summary.icon if summary else "",
            summary_text=summary.text if summary else "",
            finished_at=timezone.now(),
            event_count=len(self.events),
            tool_call_count=len(calls),
            failed_tool_count=len(failures),
        )
