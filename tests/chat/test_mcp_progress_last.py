"""The latest progress report of an MCP call always reaches the page: a server that sends
five reports and then returns shows "5 of 5" before the call's line says it finished, live
and every time (the reports and the result arrive within one coalescing interval)."""

from __future__ import annotations

import json

import pytest

from activity.recording.events import Status, ToolResult
from chat.agent.calls import PendingCall
from chat.agent.mcp.tools import tools_of
from chat.agent.outcome import CallOutcome
from chat.agent.running import run_call
from chat.turns.deps import builtin_tools
from tests.support.mcp import stdio
from tests.support.sockets import json_turn
from tests.support.tool_context import tool_context

pytestmark = pytest.mark.asyncio

FIVE = json.dumps({"steps": 5, "feedback_to_user": "Counting"})


@pytest.mark.django_db(transaction=True)
async def test_the_last_of_five_reports_is_shown_before_the_call_finishes_every_time(sessions):
    registry = builtin_tools().with_tools(tools_of(await sessions.connect([stdio("bench")])))
    for run in range(20):
        call = PendingCall(index=0, call_id=f"call_{run}", name="bench__count", arguments=FIVE)
        ran = [item async for item in run_call(registry, call, tool_context(), 20, "Counting")]

        *shown, outcome = ran
        assert isinstance(outcome, CallOutcome)
        result = outcome.result
        assert isinstance(result, ToolResult) and result.ok, result
        live = [line for line in shown if isinstance(line, Status)]
        assert live == shown, "only status lines come before the outcome"
        assert live, f"run {run}: no report was shown"
        last = live[-1]
        assert (last.message, last.progress, last.total) == ("Step 5 of 5", 5.0, 5.0), run
        reported = [line.progress for line in live if line.progress is not None]
        assert reported == [line.progress for line in live] == sorted(reported)


@pytest.mark.django_db(transaction=True)
async def test_a_follower_hears_the_last_report_before_the_tool_result(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    events = await json_turn(alice_conversation, alice, 'bench__count {"steps": 5}')

    ended = next(n for n, e in enumerate(events) if e["type"] == "tool_result")
    reports = [e for e in events[:ended] if e["type"] == "status" and "progress" in e]
    assert reports[-1]["message"] == "Step 5 of 5" and reports[-1]["progress"] == 5
    assert events[ended]["progress_message"] == "Step 5 of 5"
