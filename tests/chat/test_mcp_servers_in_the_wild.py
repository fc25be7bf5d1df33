"""MCP servers as teams ship them, not only as our own bench behaves: a server without the
optional change stream is a working server, and one that fails at once is retried with a
backoff that grows (real processes, built with the `mcp` SDK)."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from chat.agent.mcp import connections
from chat.agent.mcp.config import spec_from_mapping
from chat.agent.mcp.connections import pool
from tests.support.mcp import http_server, stdio
from tests.support.sockets import ask, finish_turns, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest_asyncio.fixture
async def sessions():
    yield pool()
    await finish_turns()
    await pool().close()


async def test_a_server_without_the_change_stream_connects_once_and_works(
    settings, sessions, alice, alice_conversation
):
    plain = stdio("plain", TESTBENCH_NO_LISTEN="1")
    settings.GLASSBOX_MCP_SERVERS = [plain]
    (connection,) = await sessions.connect([plain])
    async with asyncio.timeout(20):
        await connection.up.wait()
        while connection.listening is None:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await connection.listening  # it gave up listening, quietly
    assert connection.client is not None and not connection.broken.is_set()

    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, 'plain__count {"steps": 2}')
    events = await json_until_done(socket, 20)
    await socket.disconnect()
    assert "counted to 2" in "".join(e["content"] for e in events if e["type"] == "text")
    assert connection.sessions == 1  # one process, one session, all along


async def test_a_server_that_fails_right_after_connecting_is_retried_ever_more_slowly(
    settings, sessions, monkeypatch
):
    monkeypatch.setattr(connections, "FIRST_RETRY", 0.05)
    fragile = stdio("fragile", TESTBENCH_FRAGILE="1")
    (connection,) = await sessions.connect([fragile])
    async with asyncio.timeout(30):
        while connection.sessions < 4:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    # Each session broke at once: the wait doubles instead of starting over at each connect.
    assert connection.waits[:3] == [0.05, 0.1, 0.2]


async def test_a_legacy_sse_server_is_spoken_to_over_sse(
    settings, sessions, alice, alice_conversation
):
    with http_server(sse=True) as url:
        legacy = spec_from_mapping({"name": "legacy", "url": url})
        assert legacy.transport == "sse"
        settings.GLASSBOX_MCP_SERVERS = [legacy]
        socket = await open_socket(alice_conversation, alice, as_json=True)
        await ask(socket, 'legacy__count {"steps": 3}')
        events = await json_until_done(socket, 20)
        await socket.disconnect()
        await finish_turns()
    assert any(e["type"] == "status" and "progress" in e for e in events)  # live progress
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert (result["ok"], result["progress"], result["progress_count"]) == (True, 3, 3)
    assert "counted to 3" in "".join(e["content"] for e in events if e["type"] == "text")
