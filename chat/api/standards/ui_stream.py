"""A turn's JSON events as the AI SDK's UI message stream, v1 (the chunk schema of the `ai`
package pinned in clients/package.json).

One assistant message per turn (its id the answer's): the answer is one text part, a tool
call is a tool part (`tool-input-start` when its tool is named, `tool-input-available` with
its arguments, then its output or error), and the feed travels as data parts the SDK keeps by
id: `data-status` per status line (updated in place), `data-feedback` per call for the
model's `tool_feedback`, `data-progress` per call, `data-decision` per decision, one
`data-plan` for the agent's plan (each update replaces it), `data-tool-log` per log message
an MCP server sent during a call. A turn that waits for its owner's approval finishes its
stream there; the next stream carries on.

The answer's text part is a step of its own (`start-step` … `finish-step`): the SDK's reader
begins every read with no text part open, and a `text-start` it is sent again pushes a second
part. So a client that resumes mid-text is sent `reset-step` (which drops the parts of that
step), the text part again with the text it had, and the data parts it had (kept by id, so
those it still has are only set to what they were); it rebuilds the one text part of an uncut
read, and carries on (wires.Resume). Nothing else is reopened: tool and data parts are found
by id, and no `start` is sent again (the SDK's chat takes one as the start of a replay and
drops the message it has)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal, assert_never

from activity.recording.events import (
    IN_PLACE,
    PLAN_LINE,
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
    to_json,
)
from chat.turns.wires import Frame, Numbering

MEDIA_TYPE = "text/event-stream"
HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
FINISH_REASONS = {"complete": "stop", "waiting": "tool-calls"}
# A turn its owner stopped ends as the SDK's own streams end when their caller aborts: an
# `abort` chunk and no `finish` (its reader reports the message aborted, not failed).
ABORT_REASON = "Stopped by its user."
FAILED_TEXT = "The answer failed."
# A turn whose process died (or was shut down) says so; its owner's Stop is no error at all.
INTERRUPTED_TEXT = "The server stopped while answering."


class UiStreamWire:
    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.at = Numbering()
        self.started_tools: set[str] = set()
        self.tools: dict[str, str] = {}  # call id -> tool name, until its output
        self.text_open = False
        self.error = ""

    # A run ends where the turn waits; the next carries on.
    ends_at_wait = True
    closing = "data: [DONE]\n\n"

    @staticmethod
    def encode_error(message: str) -> str:
        """A refusal, as the error chunk a client reads, and the stream's end."""
        error = json.dumps({"type": "error", "errorText": message}, ensure_ascii=False)
        return f"data: {error}\n\ndata: [DONE]\n\n"

    def encode(self, frame: Frame) -> str:
        data = json.dumps(frame.payload, ensure_ascii=False, separators=(",", ":"))
        return f"id: {frame.id}\ndata: {data}\n\n"

    def frames(self, event: WireEvent) -> Iterator[Frame]:
        self.at.at_event(event)
        match event:
            case TurnStarted():
                yield self._frame(self._start())
            case Status():
                yield from self._status(event)
            case ToolCall():
                yield from self._tool_call(event)
            case ToolResult():
                yield self._frame(self._output(event))
                self.tools.pop(event.call_id, None)
            case TextDelta():
                yield from self._text(event.content)
            case Error():
                self.error = event.message
            case ToolFeedback():
                feedback = self._data("feedback", event.call_id, to_json(event))
                yield self.at.in_place(feedback, self._reopen())
            case Done():
                yield from self._end(event.state)
            case Decision():
                yield self._frame(self._data("decision", event.call_id, to_json(event)))
            case Plan():
                yield self._frame(self._data("plan", PLAN_LINE, to_json(event)))
            case ToolLog():
                part = f"{event.call_id}-log-{event.seq}"
                yield self._frame(self._data("tool-log", part, to_json(event)))
            case Score():
                yield self._frame(self._data("score", event.call_id, to_json(event)))
            case AppView():
                yield self._frame(self._data("app", event.call_id, to_json(event)))
            case AppNote():
                part = f"{event.call_id}-note-{event.seq}"
                yield self._frame(self._data("app-note", part, to_json(event)))
            case _:
                assert_never(event)

    def interrupt(self, waiting: Status) -> Iterator[Frame]:
        """The end of this stream while the turn waits for its owner's decision."""
        yield from self._end("waiting")

    def _status(self, status: Status) -> Iterator[Frame]:
        event = to_json(status)
        line = status.call_id or status.tool or f"status-{status.seq}"
        if status.progress is not None:
            yield self.at.in_place(self._data("progress", line, event), self._reopen())
            return
        tool, call_id = status.tool, status.call_id
        if tool and call_id and tool not in IN_PLACE and call_id not in self.started_tools:
            yield self._frame(
                {"type": "tool-input-start", "toolCallId": call_id, "toolName": tool}
            )
            self.started_tools.add(call_id)
        yield self._frame(self._data("status", line, event))

    def _tool_call(self, event: ToolCall) -> Iterator[Frame]:
        call_id, tool = event.call_id, event.tool
        if call_id not in self.started_tools:
            start = {"type": "tool-input-start", "toolCallId": call_id, "toolName": tool}
            yield self._frame(start)
            self.started_tools.add(call_id)
        yield self._frame(
            {
                "type": "tool-input-available",
                "toolCallId": call_id,
                "toolName": tool,
                "input": event.arguments,
            }
        )
        self.tools[call_id] = tool

    def _output(self, result: ToolResult) -> dict[str, Any]:
        if not result.ok:
            return {
                "type": "tool-output-error",
                "toolCallId": result.call_id,
                "errorText": result.summary,
            }
        event = to_json(result)
        output = {k: v for k, v in event.items() if k not in ("type", "seq", "call_id")}
        return {"type": "tool-output-available", "toolCallId": result.call_id, "output": output}

    def _text(self, content: str) -> Iterator[Frame]:
        if not content:
            return
        if not self.text_open:
            # At the id before it, so sent again to a client that stops right after it: the
            # SDK's reader keeps a step's start in the message only once a later chunk came.
            yield self.at.in_place({"type": "start-step"}, [], step="start")
            yield self._frame({"type": "text-start", "id": self.message_id}, step="start")
            self.text_open = True
        delta = {"type": "text-delta", "id": self.message_id, "delta": content}
        yield self.at.text_frame(delta, self._reopen(), len(content))

    def _end(self, state: str) -> Iterator[Frame]:
        if self.text_open:
            yield self._frame({"type": "text-end", "id": self.message_id}, step="end")
            self.text_open = False
            yield self._frame({"type": "finish-step"})
        if state == "stopped":
            yield self._frame({"type": "abort", "reason": ABORT_REASON}, terminal=True)
            return
        if state not in FINISH_REASONS:
            said = self.error or (INTERRUPTED_TEXT if state == "interrupted" else FAILED_TEXT)
            error = {"type": "error", "errorText": said}
            yield self._frame(error, terminal=True)
        reason = FINISH_REASONS.get(state, "error")
        yield self._frame({"type": "finish", "finishReason": reason}, terminal=True)

    def _start(self) -> dict[str, Any]:
        return {"type": "start", "messageId": self.message_id}

    def _data(self, name: str, part_id: str, event: dict[str, Any]) -> dict[str, Any]:
        return {"type": f"data-{name}", "id": part_id, "data": event}

    def _frame(
        self,
        payload: dict[str, Any],
        *,
        terminal: bool = False,
        step: Literal["start", "end", ""] = "",
    ) -> Frame:
        # Numbered before the chunk changes what is open: `reopen` is the state before it.
        return self.at.frame(payload, self._reopen(), terminal=terminal, step=step)

    def _reopen(self) -> list[Any]:
        """Nothing: see the module's docstring, and `rebuild` for the answer's text."""
        return []

    def rebuild(self, text: str, had: list[Any]) -> list[Any]:
        """The chunks that give a client that resumes inside the answer's text what it had."""
        opening = [
            {"type": "reset-step"},
            {"type": "text-start", "id": self.message_id},
            {"type": "text-delta", "id": self.message_id, "delta": text},
        ]
        return opening + [chunk for chunk in had if chunk["type"].startswith("data-")]
