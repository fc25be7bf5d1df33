"""Each MCP call carries a W3C `traceparent` in its request's `_meta`, naming the turn's
exported trace and the call's exported tool span, so the server's own spans join the turn's
trace under the call (a real server built with the `mcp` SDK answers with what it received;
tests/activity/test_traces_over_otlp.py has an instrumented one export them)."""

from __future__ import annotations

import re

import pytest

from activity.models import ActivityFeed
from activity.telemetry.ids import tool_span_id, trace_id
from tests.support.matching import found
from tests.support.mcp import stdio
from tests.support.sockets import json_turn

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_server_sees_the_turns_exported_trace_and_the_calls_tool_span(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    seen = []
    for _turn in range(2):
        events = await json_turn(alice_conversation, alice, "bench__trace {}")
        (result,) = [e for e in events if e["type"] == "tool_result"]
        assert result["ok"] is True
        seen.append((result["summary"], result["call_id"]))

    feeds = [feed async for feed in ActivityFeed.objects.order_by("pk")]
    for (received, call), feed in zip(seen, feeds, strict=True):
        trace = trace_id(feed.pk, feed.started_at)
        assert received == f"00-{trace:032x}-{tool_span_id(trace, call):016x}-01"
    traces = {found(TRACEPARENT, received) for received, _call in seen}
    assert len(traces) == 2, "each turn is a trace of its own"
