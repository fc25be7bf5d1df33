"""Following a running turn from its snapshot on, for a socket or an SSE response: nothing
shown twice, nothing skipped (status events by seq, answer text by offset)."""

from __future__ import annotations

from typing import Any

from chat.models import Message


class TurnFollower:
    def __init__(self) -> None:
        self.seen_seq: dict[int, int] = {}
        self.seen_text: dict[int, int] = {}

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

    def admit(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The event of a `turn.event` group message as this client should get it, or None."""
        answer_id = message["answer_id"]
        event = message["event"]
        if event["type"] == "text":
            seen = self.seen_text.get(answer_id, 0)
            offset = message.get("offset", 0)
            end = offset + len(event["content"])
            if end <= seen:
                return None
            self.seen_text[answer_id] = end
            return {"type": "text", "content": event["content"][max(seen - offset, 0) :]}
        if "seq" in event:
            if event["seq"] <= self.seen_seq.get(answer_id, 0):
                return None
            self.seen_seq[answer_id] = event["seq"]
        return event
