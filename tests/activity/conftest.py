from __future__ import annotations

import pytest_asyncio

from chat.agent.mcp.connections import pool
from tests.support.sockets import finish_turns


@pytest_asyncio.fixture
async def mcp_sessions():
    """This test's MCP sessions, closed at its end."""
    yield pool()
    await finish_turns()
    await pool().close()
