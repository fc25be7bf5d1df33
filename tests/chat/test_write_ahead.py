"""A tool call and its arguments are on disk before the tool's code starts, and followers
hear of the call before anything of its run."""

from __future__ import annotations

import json

import pytest

from activity.models import ActivityEvent
from chat.agent.tools import ToolRegistry
from chat.turns.deps import Dependencies
from tests.support.fakes import (
    ScriptedTransport,
    scripted_client,
    text_response,
    tool_call_response,
)
from tests.support.mcp import stdio
from tests.support.sockets import json_turn
from tests.support.turns import fixed_tools, run_turn

CHANGE = {"record": "customer 42", "change": "close the account"}


def change_turn(conversation, *calls: tuple[str, str, str]):
    transport = ScriptedTransport([tool_call_response(*calls, size=7), text_response("Done.")])
    registry = ToolRegistry.from_paths(["tests.chat.custom_tools.CHANGE_RECORD"])
    answer = run_turn(
        conversation,
        "Close the account of customer 42",
        Dependencies(
            client_factory=lambda: scripted_client(transport), tools=fixed_tools(registry)
        ),
    )
    rows = ActivityEvent.objects.filter(feed_id=answer.feed_id).order_by("seq")
    return answer, list(rows)


def found_by(result: ActivityEvent) -> list[dict]:
    return json.loads(result.result_content)["calls_on_disk"]


@pytest.mark.django_db(transaction=True)
def test_a_tool_finds_its_own_call_and_arguments_on_disk_when_it_starts(alice_conversation):
    answer, rows = change_turn(alice_conversation, ("c1", "change_record", json.dumps(CHANGE)))

    (result,) = [row for row in rows if row.kind == "tool_result"]
    assert result.ok, result.result_content
    assert found_by(result) == [{"call_id": "c1", "arguments": CHANGE}]
    assert answer.state == "complete"


@pytest.mark.django_db(transaction=True)
def test_each_of_two_parallel_calls_is_on_disk_before_its_own_tool_starts(alice_conversation):
    other = {"record": "customer 43", "change": "reopen the account"}
    _, rows = change_turn(
        alice_conversation,
        ("c1", "change_record", json.dumps(CHANGE)),
        ("c2", "change_record", json.dumps(other)),
    )

    first, second = [row for row in rows if row.kind == "tool_result"]
    assert {"call_id": "c1", "arguments": CHANGE} in found_by(first)
    assert found_by(second) == [
        {"call_id": "c1", "arguments": CHANGE},
        {"call_id": "c2", "arguments": other},
    ]


@pytest.mark.django_db(transaction=True)
def test_a_call_whose_arguments_do_not_parse_is_kept_as_sent_and_its_tool_never_runs(
    alice_conversation,
):
    broken = '{"record": "customer 42", "change": '
    _, rows = change_turn(alice_conversation, ("c1", "change_record", broken))

    (call,) = [row for row in rows if row.kind == "tool_call"]
    assert call.arguments == {"_raw": broken}
    (result,) = [row for row in rows if row.kind == "tool_result"]
    assert not result.ok and result.to_event().summary == "malformed arguments"
    assert call.seq < result.seq


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "sent",
    [
        '{"record": "customer\\u0000 42", "change": "close\\ud800 it"}',
        # Not JSON: kept as sent, but for the NUL the stream's JSON decoding made of it.
        '{"record": "customer\x00 42", "change": ',
    ],
    ids=["parsed", "not-parsed"],
)
def test_arguments_no_database_can_store_are_kept_without_it_and_the_turn_ends(
    alice_conversation, sent
):
    """The model is untrusted: a NUL (PostgreSQL refuses one in jsonb) or a lone surrogate in
    its arguments is left out of the record, and the turn writes its end."""
    answer, rows = change_turn(alice_conversation, ("c1", "change_record", sent))

    (call,) = [row for row in rows if row.kind == "tool_call"]
    kept = json.dumps(call.arguments)
    assert "customer 42" in kept and "\\u0000" not in kept and "\\ud800" not in kept
    assert answer.state == "complete"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_follower_hears_of_an_mcp_call_before_its_progress_or_its_result(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    events = await json_turn(alice_conversation, alice, 'bench__count {"steps": 3}')

    calls = [i for i, e in enumerate(events) if e["type"] == "tool_call"]
    assert len(calls) == 1 and events[calls[0]]["arguments"]["steps"] == 3
    call_id = events[calls[0]]["call_id"]
    of_its_run = [
        i
        for i, e in enumerate(events)
        if e.get("call_id") == call_id and ("progress" in e or e["type"] == "tool_result")
    ]
    assert of_its_run and min(of_its_run) > calls[0]
