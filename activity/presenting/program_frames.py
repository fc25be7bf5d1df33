"""What a program (the JSON socket, SSE) is sent of one turn, by its feed preferences on the
`program` surface. The one place both transports read; the turn itself records everything
whatever is sent.

With PROGRAM_DEFAULTS every event passes unchanged, as before surfaces existed. Otherwise:
- MODE block: text frames carry settled Markdown blocks; progress and off: the answer is held
  and sent as one text frame just before `done`. Off also withholds the work (status,
  tool_call, tool_result, tool_feedback), as the page shows only the final answer.
- LABEL (progress only): a `label` frame before the turn's first work.
- TOOL_PROGRESS false: no work frames but the status of a call that waits for a decision.
- DETAIL explain: no tool_call frames (their arguments are the raw detail).
- LINE_WIDTH: a status frame's `message` cut to it, the whole text then in `full`.
- RENDER rich: a status frame also carries its line as `fields` (activity.presenting.line_fields).
A status that waits for a decision, a decision, an error and `done` always pass.
Every frame fits a socket's (activity.presenting.bounded): answer text comes in pieces, and any
other string in a frame is cut with a mark (the stored event keeps it whole).

Plain Python (and gettext for the label)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from django.utils import translation

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.bounded import cut_values, text_pieces
from activity.presenting.line_fields import fields_of
from activity.presenting.live_markdown import settled_length
from activity.presenting.presentation import cut, line_for
from activity.recording.events import Status, from_json

UNCUT = 1_000_000
WORK = frozenset({"status", "tool_call", "tool_result", "tool_feedback"})


@dataclass
class ProgramFrames:
    prefs: FeedPrefs
    turn_id: int
    # The feed's language, for the label; '' keeps the active one.
    language: str = ""
    held: str = ""
    labelled: bool = False

    def frames(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The frames this event becomes, in order: none, itself (perhaps cut), or more."""
        return [bounded for frame in self._frames(event) for bounded in _bounded(frame)]

    def _frames(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event["type"]
        if kind == "text":
            return self._text(event)
        if kind == "done":
            return [*self._rest(), event]
        if kind not in WORK:
            return [event]
        waiting = kind == "status" and event.get("state") == "waiting"
        if self.prefs.mode == "off":
            return [self._cut(event)] if waiting else []
        shown = waiting or self._shows(kind)
        return [*self._label(), *([self._cut(event)] if shown else [])]

    def _shows(self, kind: str) -> bool:
        if not self.prefs.tool_progress:
            return False
        return kind != "tool_call" or self.prefs.detail == "raw"

    def _label(self) -> list[dict[str, Any]]:
        if self.labelled or self.prefs.mode != "progress":
            return []
        self.labelled = True
        with self._speaking():
            label = self.prefs.label_for(self.turn_id)
        return [{"type": "label", "text": label}] if label else []

    def _text(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        if self.prefs.mode == "partial":
            return [event]
        self.held += event["content"]
        if self.prefs.mode != "block":
            return []
        settled = settled_length(self.held)
        if not settled:
            return []
        block, self.held = self.held[:settled], self.held[settled:]
        return [{"type": "text", "content": block}]

    def _rest(self) -> list[dict[str, Any]]:
        held, self.held = self.held, ""
        return [{"type": "text", "content": held}] if held else []

    def _cut(self, event: dict[str, Any]) -> dict[str, Any]:
        if event["type"] != "status":
            return event
        width = self.prefs.line_width
        message = event["message"]
        shown = event
        if self.prefs.render == "rich":
            shown = shown | {"fields": self._fields(event)}
        if width and len(message) > width:
            shown = shown | {"message": cut(message, width), "full": message}
        return shown

    def _fields(self, event: dict[str, Any]) -> dict[str, Any]:
        status = from_json(event)
        assert isinstance(status, Status)
        # Uncut (0) is as wide as a line can be.
        return fields_of(line_for(status, width=self.prefs.line_width or UNCUT)).as_json()

    def _speaking(self) -> AbstractContextManager[None]:
        return translation.override(self.language) if self.language else nullcontext()


def _bounded(frame: dict[str, Any]) -> list[dict[str, Any]]:
    if frame["type"] == "text":
        return [frame | {"content": piece} for piece in text_pieces(frame["content"])]
    return [cut_values(frame)]
