"""Following a running turn from its snapshot on, for a socket or an SSE response: nothing
shown twice, nothing skipped, nothing out of order.

The channel layer may drop messages to a slow reader (channels-redis drops silently at a full
channel), so a gap is filled from the database: each status or tool event is written before
the next one is broadcast, so a seq missing before the one that arrived is always there; a
missing stretch of answer text comes from the running process's buffer or the stored text,
or, if neither has it yet, from the finished answer just before `done` (which also brings any
text lost at the very end). A `done` that was itself dropped is found in the database once the
turn has gone quiet (`ended`), so no client waits forever."""

from __future__ import annotations

from typing import Any

from activity.events import Done, to_json
from activity.models import ActivityEvent
from chat.models import Message


class TurnFollower:
    def __init__(self) -> None:
        self.seen_seq: dict[int, int] = {}
        self.seen_text: dict[int, int] = {}
        self.text_gap: set[int] = set()
        self.finished: set[int] = set()

    def start(self, answer_id: int) -> None:
        self.seen_seq[answer_id] = 0
        self.seen_text[answer_id] = 0

    def snapshot(self, message: Message) -> None:
        """The stored turn was just shown; live events already in it are dropped."""
        events = getattr(message, "feed_events", [])
        self.seen_seq[message.pk] = events[-1].seq if events else 0
        self.seen_text[message.pk] = len(message.content)

    def follows(self, answer_id: int) -> bool:
        return answer_id in self.seen_seq

    async def admit(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The events of a `turn.event` group message as this client should get them, in
        order: none if already seen, several if a gap was filled first."""
        answer_id = message["answer_id"]
        event = message["event"]
        if event["type"] == "text":
            return await self._text(answer_id, message.get("offset", 0), event["content"])
        if event["type"] == "done":
            if answer_id in self.finished:
                return []
            self.finished.add(answer_id)
            # Everything is written before `done` goes out: whatever never arrived comes now.
            seen = self.seen_seq.get(answer_id, 0)
            lines = await self._recorded(answer_id, after=seen, before=None)
            if lines:
                self.seen_seq[answer_id] = lines[-1]["seq"]
            return [*lines, *await self._missing_text_at_end(answer_id), event]
        seen = self.seen_seq.get(answer_id, 0)
        if event["seq"] <= seen:
            return []
        events = []
        if event["seq"] > seen + 1:
            events = await self._recorded(answer_id, after=seen, before=event["seq"])
        self.seen_seq[answer_id] = event["seq"]
        return [*events, event]

    async def ended(self, answer_id: int) -> list[dict[str, Any]]:
        """The end of a turn whose `done` never arrived, as stored; [] while it runs."""
        if answer_id in self.finished:
            return []
        row = await (
            Message.objects.filter(pk=answer_id)
            .exclude(state=Message.State.STREAMING)
            .values_list("state", "feed__summary_icon", "feed__summary_text")
            .afirst()
        )
        if row is None:
            return []
        done = to_json(Done(str(answer_id), *row))
        return await self.admit({"answer_id": answer_id, "event": done})

    async def _text(self, answer_id: int, offset: int, content: str) -> list[dict[str, Any]]:
        seen = self.seen_text.get(answer_id, 0)
        end = offset + len(content)
        if end <= seen or answer_id in self.text_gap:
            return []
        if offset > seen:
            known = await _text_so_far(answer_id)
            if len(known) < offset:
                self.text_gap.add(answer_id)  # filled from the finished answer at `done`
                return []
            content, offset = known[seen:offset] + content, seen
        self.seen_text[answer_id] = end
        return [{"type": "text", "content": content[seen - offset :]}]

    async def _missing_text_at_end(self, answer_id: int) -> list[dict[str, Any]]:
        """Whatever text never arrived (a gap, or frames lost at the very end)."""
        self.text_gap.discard(answer_id)
        content = await Message.objects.values_list("content", flat=True).aget(pk=answer_id)
        rest = content[self.seen_text.get(answer_id, 0) :]
        return [{"type": "text", "content": rest}] if rest else []

    async def _recorded(self, answer_id: int, *, after: int, before: int | None) -> list[dict]:
        feed_id = await Message.objects.values_list("feed_id", flat=True).aget(pk=answer_id)
        rows = ActivityEvent.objects.filter(feed_id=feed_id, seq__gt=after)
        if before is not None:
            rows = rows.filter(seq__lt=before)
        return [to_json(row.to_event()) async for row in rows.order_by("seq")]


async def _text_so_far(answer_id: int) -> str:
    from chat.turns import live_text

    stored = await Message.objects.values_list("content", flat=True).aget(pk=answer_id)
    live = live_text(answer_id)
    return live if live is not None and len(live) > len(stored) else stored
