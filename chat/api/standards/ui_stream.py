"""A turn's JSON events as the AI SDK's UI message stream, v1 (the chunk schema of the `ai`
package pinned in clients/package.json).

One assistant message per turn (its id the answer's): the answer is one text part, a tool
call is a tool part (`tool-input-start` when its tool is named, `tool-input-available` with
its arguments, then its output or error), and the feed travels as data parts the SDK keeps by
id: `data-status` per status line (updated in place), `data-feedback` per call for the
model's `tool_feedback`, `data-progress` per call, `data-decision` per decision. A turn
that waits for its owner's approval finishes its stream there; the next stream carries on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, assert_never

from activity.recording.events import (
    IN_PLACE,
    Decision,
    Done,
    Error,
    Score,
    Status,
    TextDelta,
    ToolCall,
    ToolFeedback,
    ToolResult,
    TurnStarted,
    WireEvent,
    to_json,
)
from chat.turns.wires import Frame, Numbering

MEDIA_TYPE = "text/event-stream"
HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
FINISH_REASONS = {"complete": "stop", "stopped": "other", "waiting": "tool-calls"}
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
                yield self._frame(self._data("feedback", event.call_id, to_json(event)))
            case Done():
                yield from self._end(event.state)
            case Decision():
                yield self._frame(self._data("decision", event.call_id, to_json(event)))
            case Score():
                yield self._frame(self._data("score", event.call_id, to_json(event)))
            case _:
                assert_never(event)

    def interrupt(self, waiting: Status) -> Iterator[Frame]:
        """The end of this stream while the turn waits for its owner's decision."""
        yield from self._end("waiting")

    def _status(self, status: Status) -> Iterator[Frame]:
        event = to_json(status)
        line = status.call_id or status.tool or f"status-{status.seq}"
        if status.progress is not None:
            yield self._frame(self._data("progress", line, event))
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
            yield self._frame({"type": "text-start", "id": self.message_id})
            self.text_open = True
        delta = {"type": "text-delta", "id": self.message_id, "delta": content}
        yield self.at.text_frame(delta, self._reopen(), len(content))

    def _end(self, state: str) -> Iterator[Frame]:
        if self.text_open:
            yield self._frame({"type": "text-end", "id": self.message_id})
            self.text_open = False
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

    def _frame(self, payload: dict[str, Any], *, terminal: bool = False) -> Frame:
        # Numbered before the chunk changes what is open: `reopen` is the state before it.
        return self.at.frame(payload, self._reopen(), terminal=terminal)

    def _reopen(self) -> list[Any]:
        """What a new stream must send to carry on from here: the message's start, and its
        text part if that is open (tool parts are found again by their call's id)."""
        chunks = [self._start()]
        if self.text_open:
            chunks.append({"type": "text-start", "id": self.message_id})
        return chunks
