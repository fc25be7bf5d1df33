from __future__ import annotations

import pytest

from activity.recording.events import (
    Done,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
    from_json,
    to_json,
)


def test_status_json_is_the_documented_protocol():
    status = Status(
        icon="🔍",
        message="Searching the knowledge base…",
        state="in_progress",
        tool="search_documents",
        seq=1,
    )
    assert to_json(status) == {
        "type": "status",
        "seq": 1,
        "icon": "🔍",
        "message": "Searching the knowledge base…",
        "state": "in_progress",
        "tool": "search_documents",
    }


def test_tool_events_and_done_json_match_the_protocol():
    assert to_json(ToolCall("search_documents", "call_1", {"query": "salary"}, seq=2)) == {
        "type": "tool_call",
        "seq": 2,
        "tool": "search_documents",
        "call_id": "call_1",
        "arguments": {"query": "salary"},
    }
    result = ToolResult("call_1", True, "3 documents", 212, tool="search_documents", seq=3)
    assert to_json(result) == {
        "type": "tool_result",
        "seq": 3,
        "call_id": "call_1",
        "ok": True,
        "summary": "3 documents",
        "duration_ms": 212,
    }
    assert to_json(TextDelta("According to")) == {"type": "text", "content": "According to"}
    assert to_json(Done("7", "complete", "📄", "Searched the knowledge base")) == {
        "type": "done",
        "message_id": "7",
        "state": "complete",
        "summary": {"icon": "📄", "text": "Searched the knowledge base"},
    }


def test_the_admin_only_error_never_reaches_the_wire():
    result = ToolResult("c", False, "timed out", 5, error="Traceback: secret", seq=1)
    assert "secret" not in str(to_json(result))


@pytest.mark.parametrize(
    "event",
    [
        Status("🔍", "Looking", "in_progress", tool="t", call_id="c1", seq=4),
        ToolCall("t", "c1", {"a": 1}, seq=5),
        ToolResult("c1", False, "failed", 9, seq=6),
        TextDelta("hi"),
        Done("3", "failed", "⚠️", "Knowledge base query failed"),
    ],
)
def test_events_survive_the_round_trip_through_json(event):
    assert to_json(from_json(to_json(event))) == to_json(event)


def test_an_unknown_event_type_is_refused():
    with pytest.raises(ValueError, match="unknown event type"):
        from_json({"type": "launch"})
