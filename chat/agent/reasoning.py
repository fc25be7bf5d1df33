"""A reasoning model's thinking as the stream brings it: where each provider puts it, and
the 💭 line that counts the time until the model answers or calls a tool."""

from __future__ import annotations

import time

from django.utils.translation import gettext as _

from activity.presenting.presentation import seconds
from activity.recording.events import REASONING, Status, thinking_id


class Thinking:
    """One model round's reasoning: a 💭 line from its first delta until the model answers or
    calls a tool, then the time it took on that same line."""

    def __init__(self, round_number: int) -> None:
        self.call_id = thinking_id(round_number)
        self.parts: list[str] = []
        self.started: float | None = None
        self.ms: int | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, text: str) -> Status | None:
        self.parts.append(text)
        if self.started is not None:
            return None
        self.started = time.monotonic()
        return Status(
            icon="💭", message=_("Thinking…"), state="in_progress", tool=REASONING,
            call_id=self.call_id,
        )  # fmt: skip

    def finish(self) -> Status | None:
        if self.started is None or self.ms is not None:
            return None
        self.ms = int((time.monotonic() - self.started) * 1000)
        return Status(
            icon="💭",
            message=_("Thought for %(duration)s") % {"duration": seconds(self.ms)},
            state="done",
            tool=REASONING,
            call_id=self.call_id,
        )
