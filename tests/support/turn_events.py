"""A turn's JSON events with every kind in them, as chat.turns gives them to a follower."""

from __future__ import annotations

from typing import Any

ANSWER = "Ask for **the top** of the range — politely."
ARGUMENTS = {"query": "salary", "feedback_to_user": "Looking up salary"}


def every_kind(end: str = "complete") -> list[dict[str, Any]]:
    """A turn that searches (with feedback and progress), asks before sending a mail (approved),
    fails once, thinks, and answers in three pieces; `end` is its `done` state."""
    status = {"type": "status", "icon": "🔍", "tool": "search_documents", "call_id": "c1"}
    events: list[dict[str, Any]] = [
        {"type": "turn", "question_id": "1", "message_id": "2"},
        status | {"seq": 1, "message": "Searching…", "state": "in_progress"},
        status | {"seq": 2, "message": "Looking up salary", "state": "in_progress"},
        {"type": "tool_feedback", "call_id": "c1", "feedback": "Looking up salary"},
        {"type": "tool_call", "seq": 3, "tool": "search_documents", "call_id": "c1",
         "arguments": ARGUMENTS},
        status | {"message": "Read 1 of 2", "state": "in_progress", "progress": 1, "total": 2},
        {"type": "tool_result", "seq": 4, "call_id": "c1", "ok": True, "summary": "3 documents",
         "duration_ms": 12},
        status | {"seq": 5, "message": "Found 3 documents", "state": "done"},
        {"type": "status", "seq": 6, "icon": "⏸", "message": "Send the email — waiting",
         "state": "waiting", "tool": "send_email", "call_id": "c2"},
        {"type": "decision", "seq": 7, "call_id": "c2", "tool": "send_email",
         "decision": "approve", "by": "alice", "reason": "", "waited_ms": 5},
        {"type": "tool_call", "seq": 8, "tool": "send_email", "call_id": "c2",
         "arguments": {"to": "<b>boss</b>"}},
        {"type": "tool_result", "seq": 9, "call_id": "c2", "ok": False, "summary": "Mail is down",
         "duration_ms": 3},
        {"type": "status", "seq": 10, "icon": "❌", "message": "Sending failed", "state": "failed",
         "tool": "send_email", "call_id": "c2"},
        {"type": "status", "seq": 11, "icon": "💭", "message": "Thinking", "state": "in_progress",
         "tool": "reasoning", "call_id": "r1"},
        {"type": "text", "content": ANSWER[:10]},
        {"type": "text", "content": ANSWER[10:30]},
        {"type": "text", "content": ANSWER[30:]},
    ]  # fmt: skip
    if end in ("failed", "interrupted"):
        events.append({"type": "error", "message": "The model stopped answering."})
    if end == "stopped":
        # Its owner's Stop: a line of its own, done, and no error.
        events.append(
            {"type": "status", "seq": 12, "icon": "⏹", "message": "Stopped", "state": "done"}
        )
    done = {"type": "done", "message_id": "2", "state": end, "summary": {"icon": "", "text": ""}}
    return [*events, done]


PLAN_STEPS = [
    {"text": "Search the surveys", "state": "done"},
    {"text": "Compare <b>them</b>", "state": "in_progress"},
]


def with_plan_and_log(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` (every_kind's) with the agent's plan set twice and a log message of the first
    call's server, before the answer's text."""
    at = next(index for index, event in enumerate(events) if event["type"] == "text")
    added = [
        {"type": "plan", "seq": 21, "steps": PLAN_STEPS[:1], "call_id": "p1"},
        {"type": "tool_log", "seq": 22, "call_id": "c1", "level": "warning",
         "data": "cache <cold>", "logger": "search"},
        {"type": "plan", "seq": 23, "steps": PLAN_STEPS, "call_id": "p2"},
    ]  # fmt: skip
    return [*events[:at], *added, *events[at:]]
