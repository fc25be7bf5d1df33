"""What one viewer sees of a running turn, by their feed preferences. Every socket keeps one
LivePresenter per turn; the turn itself streams and records everything whatever the mode.

Plain Python: it turns events into display operations, and the consumer renders those."""

from __future__ import annotations

import time
from collections import deque
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

from django.utils import translation

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.live_markdown import settled_length
from activity.presenting.presentation import (
    Line,
    decision_line,
    line_for,
    line_key,
    plan_line,
    raw_detail,
    shown_links,
)
from activity.recording.events import (
    PLAN_LINE,
    REASONING,
    AppNote,
    AppView,
    Decision,
    Done,
    Error,
    Link,
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
)

LABEL_KEY = "label"


@dataclass(frozen=True, slots=True)
class AddLine:
    line: Line


@dataclass(frozen=True, slots=True)
class ReplaceLine:
    line: Line


@dataclass(frozen=True, slots=True)
class RemoveLine:
    key: str


@dataclass(frozen=True, slots=True)
class AppendBlocks:
    """Settled Markdown blocks of the answer, rendered once and appended."""

    source: str


@dataclass(frozen=True, slots=True)
class SetTail:
    """The answer's unfinished last block, shown as text in place of the previous tail."""

    text: str


Op = AddLine | ReplaceLine | RemoveLine | AppendBlocks | SetTail


@dataclass
class LivePresenter:
    prefs: FeedPrefs
    turn_id: int
    started: float = field(default_factory=time.monotonic)
    work_events: int = 0
    draft_shown: bool = False
    pending: list[Line] = field(default_factory=list)
    shown: deque[str] = field(default_factory=deque)
    lines: dict[str, Status] = field(default_factory=dict)
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What each finished call's result pointed to (its tool_result comes before its ✅ line).
    links: dict[str, tuple[Link, ...]] = field(default_factory=dict)
    # The log messages each running call's MCP server sent, at the reader's level.
    logs: dict[str, tuple[ToolLog, ...]] = field(default_factory=dict)
    # Each finished call's own interface (MCP Apps; it comes after the call's ✅ line).
    apps: dict[str, AppView] = field(default_factory=dict)
    planned: bool = False
    # The answer text after its settled blocks (activity.presenting.live_markdown).
    tail: str = ""
    # The feed's language (ActivityFeed.language): the lines this presenter writes itself (the
    # draft's label, a decision) speak it, as the recorded lines do; '' keeps the active one.
    language: str = ""

    @property
    def is_draft(self) -> bool:
        return self.prefs.mode == "progress"

    def on_event(self, event: WireEvent, *, now: float | None = None) -> list[Op]:
        match event:
            case Decision():
                with self._speaking():
                    line = decision_line(event, self.prefs.line_width)
                line = replace(line, rich=self.prefs.render == "rich")
                return [ReplaceLine(line)] if line.key in self.shown else []
            case Status() if self.prefs.mode == "off":
                # Only the final answer, but a call that waits for the user's decision is no
                # progress to hide: it shows at once, in every mode.
                return self._add(self._line(event)) if event.state == "waiting" else []
            case Status():
                return self._status(event, now)
            case _ if self.prefs.mode == "off":
                return []
            case TextDelta():
                return self._text(event.content)
            case ToolCall():
                return self._tool_call(event)
            case ToolResult():
                if event.links:
                    self.links[event.call_id] = event.links
                return []
            case Plan():
                with self._speaking():
                    line = replace(plan_line(event, self.prefs.line_width), rich=self._rich)
                new, self.planned = not self.planned, True
                return self._work_line(line, now, new=new)
            case ToolLog():
                return self._log(event)
            case AppView():
                self.apps[event.call_id] = event
                return self._redrawn(f"call-{event.call_id}")
            # The answer's end is the consumer's (finish), the rest is not for the feed; a score
            # shows in its rating controls, not as a line.
            case Done() | TurnStarted() | Error() | ToolFeedback() | Score() | AppNote():
                return []
            case _:
                assert_never(event)

    def _status(self, status: Status, now: float | None) -> list[Op]:
        if status.tool == REASONING and self.prefs.show_reasoning == "off":
            return []
        key = line_key(status)
        replacing = key in self.lines
        self.lines[key] = status
        if not replacing:
            self.work_events += 1
        # Seed 001: without tool progress the feed is silent but for its label until the
        # answer (no ✍️, ✅ or 🔄 either); only a call waiting for a decision still shows.
        if not self.prefs.tool_progress and status.state != "waiting":
            return self._maybe_show_draft(now)
        line = self._line(status)
        if self.is_draft and not self.draft_shown:
            self.pending = [p for p in self.pending if p.key != key] + [line]
            return self._maybe_show_draft(now, at_once=status.state == "waiting")
        if key in self.shown:
            return [ReplaceLine(line)]
        if replacing and status.state != "waiting":
            # A line that scrolled out of the draft, or was never shown, stays out.
            return []
        return self._add(line)

    def _work_line(self, line: Line, now: float | None, *, new: bool) -> list[Op]:
        """A line of the turn's work that is not a call's status (the plan's): shown, or
        replaced in place, as a status line is."""
        if new:
            self.work_events += 1
        if not self.prefs.tool_progress:
            return self._maybe_show_draft(now)
        if self.is_draft and not self.draft_shown:
            self.pending = [p for p in self.pending if p.key != line.key] + [line]
            return self._maybe_show_draft(now)
        if line.key in self.shown:
            return [ReplaceLine(line)]
        return self._add(line) if new else []

    def _log(self, log: ToolLog) -> list[Op]:
        """A log message at the reader's level goes under its call's running line."""
        if not at_least(log.level, self.prefs.mcp_log_level):
            return []
        self.logs[log.call_id] = (*self.logs.get(log.call_id, ()), log)
        return self._redrawn(f"call-{log.call_id}")

    def _redrawn(self, key: str) -> list[Op]:
        """A running line drawn again with what it now carries (arguments, log messages)."""
        status = self.lines.get(key)
        if status is None:
            return []
        line = self._line(status)
        if key in self.shown:
            return [ReplaceLine(line)]
        self.pending = [line if p.key == key else p for p in self.pending]
        return []

    @property
    def _rich(self) -> bool:
        return self.prefs.render == "rich"

    def tick(self, now: float | None = None) -> list[Op]:
        """Called once SHOW_AFTER has passed: a turn still working shows its draft."""
        if self.prefs.mode == "off":
            return []
        return self._maybe_show_draft(now)

    def _text(self, content: str) -> list[Op]:
        """Partial mode shows settled blocks rendered and the tail as text; block mode shows
        a block once it is settled."""
        if self.is_draft:
            return []  # the final answer replaces the draft
        self.tail += content
        cut = settled_length(self.tail)
        ops: list[Op] = []
        if cut:
            ops.append(AppendBlocks(self.tail[:cut]))
            self.tail = self.tail[cut:]
        if self.prefs.mode == "partial":
            ops.append(SetTail(self.tail))
        elif cut:
            ops.append(SetTail(""))  # a joined page's snapshot may show a tail
        return ops

    def finish(self) -> list[Op]:
        """The answer is complete: its last block is settled too, so the last live render is
        the final render and nothing moves when the final answer replaces it."""
        if self.prefs.mode == "off" or self.is_draft or not self.tail:
            return []
        ops: list[Op] = [AppendBlocks(self.tail), SetTail("")]
        self.tail = ""
        return ops

    def _tool_call(self, event: ToolCall) -> list[Op]:
        self.arguments[event.call_id] = event.arguments or {}
        if self.prefs.detail != "raw":
            return []
        return self._redrawn(f"call-{event.call_id}")

    def _line(self, status: Status) -> Line:
        detail = ""
        if self.prefs.detail == "raw" and status.state in ("in_progress", "waiting"):
            detail = raw_detail(self.arguments.get(status.call_id, {}))
        line = line_for(status, width=self.prefs.line_width, detail=detail)
        if status.state == "done" and status.call_id in self.links:
            line = replace(line, links=shown_links(self.links[status.call_id]))
        if status.state == "done" and status.call_id in self.apps:
            line = replace(line, app=self.apps[status.call_id])
        if line.key == f"call-{status.call_id}" and status.call_id in self.logs:
            line = replace(line, logs=self.logs[status.call_id])
        return replace(line, rich=self._rich)

    def _maybe_show_draft(self, now: float | None, *, at_once: bool = False) -> list[Op]:
        if not self.is_draft or self.draft_shown or self.work_events == 0:
            return []
        elapsed = (now if now is not None else time.monotonic()) - self.started
        if not at_once and self.work_events < 2 and elapsed < self.prefs.show_after:
            return []
        self.draft_shown = True
        ops: list[Op] = []
        with self._speaking():
            label = self.prefs.label_for(self.turn_id)
        if label:
            ops += self._add(
                Line(LABEL_KEY, 0, "", label, "in_progress", "", full="", duration_ms=None)
            )
        for line in self.pending:
            ops += self._add(line)
        self.pending = []
        return ops

    def _speaking(self) -> AbstractContextManager[None]:
        return translation.override(self.language) if self.language else nullcontext()

    def _add(self, line: Line) -> list[Op]:
        ops: list[Op] = [AddLine(line)]
        self.shown.append(line.key)
        if self.is_draft:
            while len(self.shown) > self.prefs.max_lines:
                # The plan stays while the steps under it scroll away: it is the draft's map.
                oldest = next((k for k in self.shown if k != PLAN_LINE), self.shown[0])
                self.shown.remove(oldest)
                ops.append(RemoveLine(oldest))
        return ops
