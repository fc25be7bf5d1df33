from __future__ import annotations

import pytest_asyncio

from chat.agent.mcp.connections import pool
from tests.support.sockets import finish_turns


@pytest_asyncio.fixture
async def sessions():
    """This test's MCP sessions, closed (their processes ended) at its end."""
    yield pool()
    await finish_turns()
    await pool().close()
