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
- MCP_LOG_LEVEL: tool_log frames below it are not sent (a program's default sends them all).
A status that waits for a decision, a decision, an error and `done` always pass.
Every frame fits a socket's (activity.presenting.bounded): answer text comes in pieces, and any
other string in a frame is cut with a mark (the stored event keeps it whole).

Plain Python (and gettext for the label)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, assert_never

from django.utils import translation

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.bounded import cut_values, text_pieces
from activity.presenting.line_fields import fields_of
from activity.presenting.live_markdown import settled_length
from activity.presenting.presentation import cut, line_for
from activity.recording.events import (
    AppNote,
    AppView,
    Decision,
    Done,
    Error,
    Plan,
    Score,
    Status,
    TextDelta,
    ToolCall,
    ToolFeedback,
    ToolLog,
    ToolResult,
    TurnStarted,
    WireEvent,
    at_least,
    to_json,
)

UNCUT = 1_000_000


@dataclass
class ProgramFrames:
    prefs: FeedPrefs
    turn_id: int
    # The feed's language, for the label; '' keeps the active one.
    language: str = ""
    held: str = ""
    labelled: bool = False

    def frames(self, event: WireEvent) -> list[dict[str, Any]]:
        """The frames this event becomes, in order: none, itself (perhaps cut), or more.
        Every frame fits a socket's: text in pieces, any other string cut with a mark."""
        match event:
            case TextDelta():
                return self._text(event.content)
            case Done():
                return [*self._rest(), cut_values(to_json(event))]
            case Status() if event.state == "waiting":
                # A call that waits for a decision shows in every mode.
                label = [] if self.prefs.mode == "off" else self._label()
                return [*label, cut_values(self._status(event))]
            case Status():
                return self._work(self._status(event), shown=self.prefs.tool_progress)
            case ToolCall():
                raw = self.prefs.detail == "raw"
                return self._work(to_json(event), shown=self.prefs.tool_progress and raw)
            case ToolResult() | ToolFeedback() | Plan() | AppView():
                return self._work(to_json(event), shown=self.prefs.tool_progress)
            case ToolLog():
                shown = at_least(event.level, self.prefs.mcp_log_level)
                return self._work(to_json(event), shown=self.prefs.tool_progress and shown)
            case Decision() | Score() | AppNote() | TurnStarted() | Error():
                return [cut_values(to_json(event))]
            case _:
                assert_never(event)

    def _work(self, frame: dict[str, Any], *, shown: bool) -> list[dict[str, Any]]:
        """A frame of the turn's work: withheld in mode off, after the label otherwise."""
        if self.prefs.mode == "off":
            return []
        return [*self._label(), *([cut_values(frame)] if shown else [])]

    def _label(self) -> list[dict[str, Any]]:
        if self.labelled or self.prefs.mode != "progress":
            return []
        self.labelled = True
        with self._speaking():
            label = self.prefs.label_for(self.turn_id)
        return [cut_values({"type": "label", "text": label})] if label else []

    def _text(self, content: str) -> list[dict[str, Any]]:
        if self.prefs.mode == "partial":
            return _pieces(content)
        self.held += content
        if self.prefs.mode != "block":
            return []
        settled = settled_length(self.held)
        if not settled:
            return []
        block, self.held = self.held[:settled], self.held[settled:]
        return _pieces(block)

    def _rest(self) -> list[dict[str, Any]]:
        held, self.held = self.held, ""
        return _pieces(held) if held else []

    def _status(self, status: Status) -> dict[str, Any]:
        width = self.prefs.line_width
        shown = to_json(status)
        if self.prefs.render == "rich":
            # Uncut (0) is as wide as a line can be.
            line = line_for(status, width=width or UNCUT)
            shown = shown | {"fields": fields_of(line).as_json()}
        if width and len(status.message) > width:
            shown = shown | {"message": cut(status.message, width), "full": status.message}
        return shown

    def _speaking(self) -> AbstractContextManager[None]:
        return translation.override(self.language) if self.language else nullcontext()


def _pieces(content: str) -> list[dict[str, Any]]:
    return [to_json(TextDelta(piece)) for piece in text_pieces(content)]
