"""What a test reads of stored rows, narrowed to what it expects to be there."""

from __future__ import annotations

from activity.models import ActivityEvent
from activity.recording.events import Plan, ToolCall, ToolLog
from chat.models import Message


def answer_feed_id(answer: Message) -> int:
    """An answer's feed id, without reading the feed (a question has none)."""
    assert answer.feed_id is not None, f"message {answer.pk} is a question: it has no feed"
    return answer.feed_id


def tool_call_of(row: ActivityEvent) -> ToolCall:
    """A tool_call row read back as its event."""
    event = row.to_event()
    assert isinstance(event, ToolCall), f"{row.kind} is not a tool call"
    return event


def plan_of(row: ActivityEvent) -> Plan:
    """A plan row read back as its event."""
    event = row.to_event()
    assert isinstance(event, Plan), f"{row.kind} is not a plan"
    return event


def log_of(row: ActivityEvent) -> ToolLog:
    """A tool_log row read back as its event."""
    event = row.to_event()
    assert isinstance(event, ToolLog), f"{row.kind} is not a log message"
    return event
