"""A connection to an MCP server is in one state at a time: down (not opened yet, or failed
and retried), connected, or closing; and it reaches the SDK only through its public modules."""

from __future__ import annotations

import ast
import asyncio

import pytest

from chat.agent.mcp import connections
from chat.agent.mcp.config import spec_from_mapping
from tests.support.mcp import ROOT, stdio


@pytest.mark.asyncio
async def test_a_server_that_cannot_start_is_down_with_a_reason_and_closing_ends_it(sessions):
    missing = spec_from_mapping({"name": "missing", "command": "/nonexistent/glassbox-mcp"})
    (connection,) = await sessions.connect([missing])
    async with asyncio.timeout(20):
        await connection.tried.wait()
    assert isinstance(connection.state, connections.Down)
    assert str(connection.reason) == "its command cannot be started"
    assert connection.client is None and not connection.up.is_set() and connection.since

    await connection.close()
    assert isinstance(connection.state, connections.Closing) and connection.task.done()
    assert connection.reason == "" and connection.tools == []


@pytest.mark.asyncio
async def test_a_connected_server_is_one_state_with_its_session_and_time(sessions):
    (connection,) = await sessions.connect([stdio("bench")])
    async with asyncio.timeout(20):
        await connection.up.wait()
    state = connection.state
    assert isinstance(state, connections.Connected)
    assert (connection.client, connection.since, connection.reason) == (
        state.client, state.since, ""
    )  # fmt: skip


def test_the_connections_import_no_private_module_of_the_sdk():
    source = (ROOT / "chat" / "agent" / "mcp" / "connections.py").read_text()
    imported = [
        node.module or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
    ]
    private = [name for name in imported if name.split(".")[0] == "mcp" and "._" in name]
    assert imported and not private
