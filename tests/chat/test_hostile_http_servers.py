"""The hostile MCP server (tests/support/hostile_mcp_server.py) served over HTTP by the SDK's
own apps under uvicorn, three ways: Streamable HTTP answering a call with an event stream
(the call reports progress first), the same answering with a JSON body, and the legacy SSE
transport. A result over the bound fails its
call in words, this process's memory does not grow by the result's size, other coroutines'
ticks keep coming, and the session stays up for the next call (chat.agent.mcp.bounded_http)."""

from __future__ import annotations

import inspect
import time

import httpx2
import pytest
import pytest_asyncio
from mcp.client.sse import sse_client

from activity.models import ActivityEvent
from chat.agent.mcp import bounded_http
from chat.agent.mcp.bounded_http import LEGACY_EVENT_LIMIT
from chat.agent.mcp.config import spec_from_mapping
from chat.agent.mcp.connections import pool
from tests.support.mcp import http_server
from tests.support.resident import PeakGrowth
from tests.support.sockets import finish_turns, json_turn
from tests.support.stalls import Ticker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# Only a real stall breaks it: the turn's own work holds the loop a little on a busy machine.
STALL = 1.0
# Well under the 50 MB result: the bound (4 MB) held once, and what a turn costs anyway.
GROWTH_MB = 20
DROPPED = "“Big” failed (the result was dropped: it was "
# How each way says it: an SSE stream's length is unknown, so it is left at the bound; a
# JSON body says its length; the legacy stream is the session's own, read past the event.
MODES = {
    "streamable-sse": ({"HOSTILE_STREAM": "1"}, False, DROPPED + "over the 4 MB allowed)"),
    "streamable-json": ({}, False, DROPPED + "50 MB, over the 4 MB allowed)"),
    "legacy-sse": ({}, True, DROPPED + "50 MB, over the 1 MB allowed)"),
}


@pytest_asyncio.fixture(params=list(MODES))
async def hostile(request, settings, sessions):
    """The server over HTTP, declared; what a 50 MB result's line says in that mode."""
    env, sse, words = MODES[request.param]
    module = "tests.support.hostile_mcp_server"
    with http_server(module, sse=sse, environment=env, HOSTILE_SCHEMA="calls") as url:
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "hostile", "url": url})]
        yield words
        await finish_turns()
        await pool().close()


def statuses(events: list[dict], state: str) -> list[str]:
    return [e["message"] for e in events if e["type"] == "status" and e["state"] == state]


async def still_up() -> bool:
    (connection,) = pool().connections.values()
    return connection.client is not None and connection.sessions == 1


async def run(conversation, user, question: str) -> tuple[list[dict], float]:
    async with Ticker() as ticks:
        events = await json_turn(conversation, user, question, 60)
    assert events[-1]["type"] == "done" and events[-1]["state"] in ("complete", "failed")
    return events, ticks.longest


async def test_a_50_mb_result_over_http_is_dropped_in_words_and_the_next_call_works(
    hostile, alice, alice_conversation
):
    warm, _longest = await run(alice_conversation, alice, "hostile__ping {}")
    assert statuses(warm, "done")[0] == "“Ping” finished"

    with PeakGrowth() as growth:
        events, longest = await run(alice_conversation, alice, "hostile__big {}")

    assert statuses(events, "failed") == [hostile]
    assert events[-1]["state"] == "complete"
    assert growth.megabytes < GROWTH_MB, f"grew {growth.megabytes:.0f} MB"
    assert longest < STALL
    assert await still_up()
    again, _longest = await run(alice_conversation, alice, "hostile__ping {}")
    assert statuses(again, "done")[0] == "“Ping” finished"


async def test_bytes_that_are_not_utf8_nuls_and_lone_surrogates_over_http_are_replaced(
    hostile, alice, alice_conversation
):
    events, longest = await run(alice_conversation, alice, "hostile__garbled {}")

    assert statuses(events, "done")[0] == (
        "“Garbled” finished (5 characters that were not text were replaced)"
    )
    result = await ActivityEvent.objects.aget(kind="tool_result")
    assert result.result_content == "caf\ufffd \ufffd\ufffd ok  nul \ufffd half"
    assert longest < STALL
    assert await still_up()


async def test_the_sdk_hooks_the_http_bounds_rely_on_are_still_there():
    """The legacy transport takes our client only through `httpx_client_factory`, and its
    reader keeps httpx2's own event bound, which ours must stay under."""
    assert "httpx_client_factory" in inspect.signature(sse_client).parameters
    source = inspect.getsource(sse_client)
    assert "sse_within_origin(client, url)" in source, (
        "mcp's sse_client now sets its own event bound: compare LEGACY_EVENT_LIMIT with it"
    )
    assert LEGACY_EVENT_LIMIT < httpx2._config.DEFAULT_MAX_EVENT_SIZE_BYTES


async def test_a_2_mb_result_in_an_event_stream_arrives_whole(
    settings, sessions, alice, alice_conversation
):
    """Under the bound, over the SDK's own 1 MB per event (which ended the session)."""
    module = "tests.support.hostile_mcp_server"
    env = {"HOSTILE_SCHEMA": "calls", "HOSTILE_STREAM": "1", "HOSTILE_BIG_MB": "2"}
    with http_server(module, environment=env) as url:
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "hostile", "url": url})]
        events, longest = await run(alice_conversation, alice, "hostile__big {}")
        assert await still_up()
        await finish_turns()
        await pool().close()

    assert statuses(events, "done")[0] == "“Big” finished"
    result = await ActivityEvent.objects.aget(kind="tool_result")
    assert result.result_content.endswith("[cut: the result was 2097152 characters]")
    assert longest < STALL


async def test_an_oversized_event_on_the_legacy_stream_is_read_past_at_a_pace(
    settings, sessions, alice, alice_conversation, monkeypatch
):
    # A slow pace for a short test: the 3 MB past the legacy bound at 2 MiB a second.
    monkeypatch.setattr(bounded_http, "SKIPPED_PER_SECOND", 2 * 1024 * 1024)
    monkeypatch.setattr(bounded_http, "SKIPPED_AT_ONCE", 0)
    module = "tests.support.hostile_mcp_server"
    big = {"HOSTILE_BIG_MB": "4"}
    with http_server(module, sse=True, environment=big, HOSTILE_SCHEMA="calls") as url:
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "hostile", "url": url})]
        await run(alice_conversation, alice, "hostile__ping {}")
        began = time.monotonic()
        events, longest = await run(alice_conversation, alice, "hostile__big {}")
        took = time.monotonic() - began
        await finish_turns()
        await pool().close()

    assert statuses(events, "failed") == [DROPPED + "4 MB, over the 1 MB allowed)"]
    # The server wrote as fast as it could; what was past the bound was read at the pace.
    assert took >= (4 - 1) / 2
    assert longest < STALL
