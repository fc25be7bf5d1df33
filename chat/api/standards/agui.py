"""A turn's JSON events as AG-UI events (ag-ui-protocol's types).

One run per turn (its id the answer's), one text message (the answer), a tool call per
`call_id` (opened by the first status naming its tool, or by its `tool_call`), a step per
status line (finished when the line is done or failed; a later in-progress status of an open
line is its new text, a CUSTOM "status" event), the model's `tool_feedback` as CUSTOM
"feedback", progress as CUSTOM "progress", decisions as CUSTOM "decision", an MCP server's
log message as CUSTOM "tool_log", the agent's plan as a STATE_SNAPSHOT `{"plan": …}`. The end is
RUN_FINISHED, cancelled for a stopped turn, or RUN_ERROR for a failed or interrupted one; a
turn that waits for its owner's approval ends its run with an interrupt, and the next run
carries on from there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, assert_never

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder

from activity.recording.events import (
    IN_PLACE,
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

MEDIA_TYPE = EventEncoder().get_content_type()
FAILED_TEXT = "The answer failed."
# A turn whose process died (or was shut down) says so; its owner's Stop is no error at all.
INTERRUPTED_TEXT = "The server stopped while answering."


class AguiWire:
    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.at = Numbering()
        self.steps: dict[str, dict[str, Any]] = {}  # open step name -> its status event
        self.tools: dict[str, str] = {}  # open tool call id -> tool name
        self.started_tools: set[str] = set()
        self.text_open = False
        self.error = ""

    # A run ends where the turn waits; the next carries on.
    ends_at_wait = True
    closing = ""
    # Each run reopens what was open, the text message included (the client's verifier
    # wants every run to open what it writes to; HttpAgent finds the message by its id).
    rebuild = None

    def encode(self, frame: Frame) -> str:
        return f"id: {frame.id}\n{EventEncoder().encode(frame.payload)}"

    @staticmethod
    def encode_error(message: str) -> str:
        """A refusal, as the one event a client reads as the run's failure."""
        return EventEncoder().encode(RunErrorEvent(message=message, code="refused"))

    def frames(self, event: WireEvent) -> Iterator[Frame]:
        self.at.at_event(event)
        match event:
            case TurnStarted():
                yield self._frame(self._run_started())
            case Status():
                yield from self._status(event)
            case ToolCall():
                yield from self._tool_call(event)
            case ToolResult():
                yield from self._end_tool(event.call_id)
                content = {k: v for k, v in to_json(event).items() if k not in ("type", "seq")}
                yield self._frame(
                    ToolCallResultEvent(
                        message_id=f"{event.call_id}-result",
                        tool_call_id=event.call_id,
                        content=json.dumps(content, ensure_ascii=False),
                        role="tool",
                    )
                )
            case TextDelta():
                yield from self._text(event.content)
            case Error():
                self.error = event.message
            case ToolFeedback():
                feedback = CustomEvent(name="feedback", value=to_json(event))
                yield self.at.in_place(feedback, self._reopen())
            case Done():
                yield from self._close_all()
                yield self._end(event.state)
            case Decision():
                yield self._frame(CustomEvent(name="decision", value=to_json(event)))
            case Plan():
                # The agent's state, as AG-UI clients keep a plan: each update replaces it.
                plan = {k: v for k, v in to_json(event).items() if k not in ("type", "seq")}
                yield self._frame(StateSnapshotEvent(snapshot={"plan": plan}))
            case ToolLog():
                yield self._frame(CustomEvent(name="tool_log", value=to_json(event)))
            case Score():
                yield self._frame(CustomEvent(name="score", value=to_json(event)))
            case AppView():
                yield self._frame(CustomEvent(name="app", value=to_json(event)))
            case AppNote():
                yield self._frame(CustomEvent(name="app_note", value=to_json(event)))
            case _:
                assert_never(event)

    def interrupt(self, waiting: Status) -> Iterator[Frame]:
        """The end of this run while the turn waits for its owner's decision on a call."""
        yield from self._close_all()
        call_id = waiting.call_id or waiting.tool or "approval"
        interrupt = Interrupt(
            id=call_id, reason="approval", message=waiting.message, tool_call_id=call_id
        )
        outcome = RunFinishedInterruptOutcome(interrupts=[interrupt])
        yield self._frame(self._run_finished(outcome), terminal=True)

    def _status(self, status: Status) -> Iterator[Frame]:
        event = to_json(status)
        if status.progress is not None:
            yield self.at.in_place(CustomEvent(name="progress", value=event), self._reopen())
            return
        name = status.call_id or status.tool or f"status-{status.seq}"
        tool, call_id = status.tool, status.call_id
        if tool and call_id and tool not in IN_PLACE and call_id not in self.started_tools:
            yield from self._start_tool(call_id, tool)
        if name in self.steps and status.state == "in_progress":
            self.steps[name] = event
            yield self._frame(CustomEvent(name="status", value=event))
            return
        if name not in self.steps:
            yield self._frame(StepStartedEvent(step_name=name, raw_event=event))
            self.steps[name] = event
        if status.state in ("done", "failed"):
            yield self._frame(StepFinishedEvent(step_name=name, raw_event=event))
            del self.steps[name]

    def _tool_call(self, event: ToolCall) -> Iterator[Frame]:
        call_id = event.call_id
        if call_id not in self.started_tools:
            yield from self._start_tool(call_id, event.tool)
        if call_id in self.tools:
            arguments = json.dumps(event.arguments, ensure_ascii=False)
            yield self._frame(ToolCallArgsEvent(tool_call_id=call_id, delta=arguments))
            yield from self._end_tool(call_id)

    def _start_tool(self, call_id: str, tool: str) -> Iterator[Frame]:
        yield self._frame(ToolCallStartEvent(tool_call_id=call_id, tool_call_name=tool))
        self.tools[call_id] = tool
        self.started_tools.add(call_id)

    def _end_tool(self, call_id: str) -> Iterator[Frame]:
        if call_id in self.tools:
            yield self._frame(ToolCallEndEvent(tool_call_id=call_id))
            del self.tools[call_id]

    def _text(self, content: str) -> Iterator[Frame]:
        if not content:
            return
        if not self.text_open:
            yield self._frame(TextMessageStartEvent(message_id=self.run_id, role="assistant"))
            self.text_open = True
        delta = TextMessageContentEvent(message_id=self.run_id, delta=content)
        yield self.at.text_frame(delta, self._reopen(), len(content))

    def _close_all(self) -> Iterator[Frame]:
        for call_id in list(self.tools):
            yield from self._end_tool(call_id)
        if self.text_open:
            yield self._frame(TextMessageEndEvent(message_id=self.run_id))
            self.text_open = False
        for name in list(self.steps):
            yield self._frame(StepFinishedEvent(step_name=name, raw_event=self.steps[name]))
            del self.steps[name]

    def _end(self, state: str) -> Frame:
        if state == "complete":
            return self._frame(self._run_finished(None), terminal=True)
        if state == "stopped":
            return self._frame(self._run_finished(RunFinishedCancelledOutcome()), terminal=True)
        said = self.error or (INTERRUPTED_TEXT if state == "interrupted" else FAILED_TEXT)
        error = RunErrorEvent(message=said, code=state)
        return self._frame(error, terminal=True)

    def _run_started(self) -> RunStartedEvent:
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)

    def _run_finished(self, outcome: Any) -> RunFinishedEvent:
        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome)

    def _frame(self, event: BaseEvent, *, terminal: bool = False) -> Frame:
        # Numbered before the event changes what is open: `reopen` is the state before it.
        return self.at.frame(event, self._reopen(), terminal=terminal)

    def _reopen(self) -> list[Any]:
        """What a new run must open to carry on from here: itself, the open steps, the
        answer's message and the open tool calls."""
        events: list[BaseEvent] = [self._run_started()]
        events += [StepStartedEvent(step_name=name) for name in self.steps]
        if self.text_open:
            events.append(TextMessageStartEvent(message_id=self.run_id, role="assistant"))
        events += [
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=tool)
            for call_id, tool in self.tools.items()
        ]
        return events
