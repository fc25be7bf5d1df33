"""Tools from MCP servers: their configuration, one reused session per server and process,
and the adapter that makes their tools the agent's.

The SDK (about 30 MiB a process, with its schema validator) is loaded with the first
server a process opens (when it starts, chat.servers.heartbeat, or at a turn): a deployment
without MCP servers never pays for it."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chat.agent.mcp.config import ServerSpec
    from chat.agent.mcp.oauth import Asker
    from chat.agent.mcp.tools import McpTool

# Imported with the first connection: until then this process holds none to close.
_CONNECTIONS = "chat.agent.mcp.connections"


async def connected_tools(specs: Iterable[ServerSpec]) -> list[McpTool]:
    """The tools of these servers that are connected now, or connecting with tools remembered
    from an earlier session; connections to servers no longer declared are closed."""
    # A server each user connects to with their own grant is opened per user (user_tools).
    specs = [spec for spec in specs if not spec.oauth]
    if not any(spec.enabled for spec in specs) and _CONNECTIONS not in sys.modules:
        return []  # nothing to connect, and nothing was ever connected in this process
    from chat.agent.mcp.connections import pool
    from chat.agent.mcp.tools import tools_of

    return tools_of(await pool().ready(specs))


async def user_tools(specs: Iterable[ServerSpec], asker: Asker) -> list[McpTool]:
    """The tools of the servers this turn's user connects to with their own OAuth grant,
    asking them through the turn for the grants they have not given."""
    specs = [spec for spec in specs if spec.enabled and spec.oauth]
    if not specs:
        return []
    from chat.agent.mcp.oauth import user_pool
    from chat.agent.mcp.tools import tools_of

    return tools_of(await user_pool().connect(specs, asker))


def release_asker(asker: Asker) -> None:
    """The turn ended: its user's sessions no longer ask through it."""
    if "chat.agent.mcp.oauth" in sys.modules:
        from chat.agent.mcp.oauth import user_pool

        with suppress(RuntimeError):  # no running loop: nothing was opened
            user_pool().release(asker)
