"""Each MCP call carries a W3C `traceparent` in its request's `_meta`, so the server's own
traces join the turn's: one trace id per turn, one span id per call (a real server built with
the `mcp` SDK answers with what it received)."""

from __future__ import annotations

import re

import pytest

from activity.models import ActivityFeed
from chat.agent.traceparent import traceparent_for
from tests.support.mcp import stdio
from tests.support.sockets import json_turn

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_server_sees_the_turns_trace_and_the_calls_span(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    seen = []
    for _turn in range(2):
        events = await json_turn(alice_conversation, alice, "bench__trace {}")
        (result,) = [e for e in events if e["type"] == "tool_result"]
        assert result["ok"] is True
        seen.append((result["summary"], result["call_id"]))

    feeds = [
        str(pk) async for pk in ActivityFeed.objects.order_by("pk").values_list("pk", flat=True)
    ]
    for (received, call), feed in zip(seen, feeds, strict=True):
        assert TRACEPARENT.match(received), received
        assert received == traceparent_for(feed, call)
    traces = {TRACEPARENT.match(received)[1] for received, _call in seen}
    assert len(traces) == 2, "each turn is a trace of its own"


def test_calls_of_one_turn_share_its_trace_and_each_has_a_span_of_its_own():
    first, second, again = (
        traceparent_for("41", "call_1"),
        traceparent_for("41", "call_2"),
        traceparent_for("41", "call_1"),
    )
    assert first == again, "stable: a resumed turn's call keeps its ids"
    (trace, span), (trace_2, span_2) = (TRACEPARENT.match(t).groups() for t in (first, second))
    assert trace == trace_2 and span != span_2
    assert TRACEPARENT.match(traceparent_for("42", "call_1"))[1] != trace
