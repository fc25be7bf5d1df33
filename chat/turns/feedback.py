"""The seed's `tool_feedback` events of recorded calls, for a follower that joins late: live
followers heard each call's feedback the moment it was complete (chat.agent.calls); the
record keeps it in the call's arguments, and its status line when it was not empty."""

from __future__ import annotations

from typing import Any

from activity.recording.events import ToolFeedback, to_json
from chat.agent.tools import FEEDBACK_ARG, truncate_feedback


def feedback_of(events: list[dict[str, Any]]) -> dict[str, str]:
    """Each recorded call's feedback, as it was sent, by call id."""
    return {
        event["call_id"]: truncate_feedback(feedback)
        for event in events
        if event["type"] == "tool_call"
        and isinstance(feedback := (event.get("arguments") or {}).get(FEEDBACK_ARG), str)
    }


def with_feedback(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded events with each call's tool_feedback where it was sent live: after the
    status line that shows it, or, for an empty one, just before the call."""
    feedback = feedback_of(events)
    out: list[dict[str, Any]] = []
    for event in events:
        call_id = event.get("call_id", "")
        text = feedback.get(call_id)
        if text is not None and event["type"] == "tool_call":
            out.append(to_json(ToolFeedback(call_id, feedback.pop(call_id))))
        out.append(event)
        if text and event["type"] == "status" and event["message"] == text:
            out.append(to_json(ToolFeedback(call_id, feedback.pop(call_id))))
    return out
