"""Tools from MCP servers: their configuration, one reused session per server and process,
and the adapter that makes their tools the agent's.

The SDK (about 30 MiB a process, with its schema validator) is loaded with the first
server a process opens (when it starts, chat.servers.heartbeat, or at a turn): a deployment
without MCP servers never pays for it."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chat.agent.mcp.config import ServerSpec
    from chat.agent.mcp.tools import McpTool

# Imported with the first connection: until then this process holds none to close.
_CONNECTIONS = "chat.agent.mcp.connections"


async def connected_tools(specs: Iterable[ServerSpec]) -> list[McpTool]:
    """The tools of these servers that are connected now, or connecting with tools remembered
    from an earlier session; connections to servers no longer declared are closed."""
    specs = list(specs)
    if not any(spec.enabled for spec in specs) and _CONNECTIONS not in sys.modules:
        return []  # nothing to connect, and nothing was ever connected in this process
    from chat.agent.mcp.connections import pool
    from chat.agent.mcp.tools import tools_of

    return tools_of(await pool().ready(specs))
