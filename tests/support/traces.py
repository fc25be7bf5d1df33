"""Turns whose traces the trace tests read: an MCP call that says which session it ran in."""

from __future__ import annotations

from activity.models import ActivityEvent
from tests.support.sockets import json_turn


async def served_session(conversation, user, server: str = "web") -> tuple[str, ActivityEvent]:
    """One turn calling the test bench's `session` tool on `server`: the session the server
    says it served, and the call's stored result (with its feed)."""
    events = await json_turn(conversation, user, f"{server}__session {{}}")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"], result["summary"]
    row = await ActivityEvent.objects.select_related("feed").aget(
        kind="tool_result", call_id=result["call_id"], feed__message__pk=events[-1]["message_id"]
    )
    return result["summary"], row
