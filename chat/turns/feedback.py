"""The seed's `tool_feedback` events of recorded calls, for a follower that joins late: live
followers heard each call's feedback the moment it was complete (chat.agent.calls); the
record keeps it in the call's arguments, and its status line when it was not empty."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from activity.recording.events import (
    AppNote,
    AppView,
    Decision,
    Plan,
    RecordedEvent,
    Score,
    Status,
    ToolCall,
    ToolFeedback,
    ToolLog,
    ToolResult,
    WireEvent,
)
from chat.agent.tools import FEEDBACK_ARG, truncate_feedback


def feedback_of(events: Sequence[RecordedEvent]) -> dict[str, str]:
    """Each recorded call's feedback, as it was sent, by call id."""
    return {
        event.call_id: truncate_feedback(feedback)
        for event in events
        if isinstance(event, ToolCall)
        and isinstance(feedback := (event.arguments or {}).get(FEEDBACK_ARG), str)
    }


def with_feedback(events: Sequence[RecordedEvent]) -> list[WireEvent]:
    """The recorded events with each call's tool_feedback where it was sent live: after the
    status line that shows it, or, for an empty one, just before the call."""
    feedback = feedback_of(events)
    out: list[WireEvent] = []
    for event in events:
        match event:
            case ToolCall() if event.call_id in feedback:
                out += [ToolFeedback(event.call_id, feedback.pop(event.call_id)), event]
            case Status() if feedback.get(event.call_id) and event.message == feedback.get(
                event.call_id
            ):
                out += [event, ToolFeedback(event.call_id, feedback.pop(event.call_id))]
            case (
                Status()
                | ToolCall()
                | ToolResult()
                | Decision()
                | Plan()
                | ToolLog()
                | Score()
                | AppView()
                | AppNote()
            ):
                out.append(event)
            case _:
                assert_never(event)
    return out
