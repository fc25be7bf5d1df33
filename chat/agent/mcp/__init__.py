"""Tools from MCP servers: their configuration, one reused session per server and process,
and the adapter that makes their tools the agent's.

The SDK (about 30 MiB a process, with its schema validator) is loaded with the first
server a process opens (when it starts, chat.servers.heartbeat, or at a turn): a deployment
without MCP servers never pays for it."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING

from django.utils.translation import gettext as _

from chat.agent.mcp.limits import DEFAULT_LIMITS, McpLimits
from chat.agent.tools import AgentTool, ToolError, ToolRegistry

if TYPE_CHECKING:
    from chat.agent.mcp.config import ServerSpec
    from chat.agent.mcp.connections import Connection
    from chat.agent.mcp.oauth import Asker
    from chat.agent.mcp.tools import McpTool

# Imported with the first connection: until then this process holds none to close.
_CONNECTIONS = "chat.agent.mcp.connections"


async def offer_tools(
    registry: ToolRegistry,
    specs: Iterable[ServerSpec],
    asker: Asker | None,
    limits: McpLimits = DEFAULT_LIMITS,
) -> None:
    """Adds to a turn's `registry` the tools it can offer without waiting for anybody: those
    of the servers connected now (or connecting with tools remembered), and those of the
    sessions its user has open with servers they connect to themselves (with an `asker`),
    or opens now with the grant they stored (once per process, within the connect timeout).
    Every other server is offered as its connect tool (chat.agent.mcp.connect_tool), which
    opens it, asking the user if it must, only when the model calls it. `limits` are the
    deployment's, as the caller read them (chat.servers.configured)."""
    specs = [spec for spec in specs if spec.enabled]
    shared = [spec for spec in specs if not spec.oauth]
    own = [spec for spec in specs if spec.oauth] if asker is not None else []
    if not own and not shared and _CONNECTIONS not in sys.modules:
        return  # nothing to connect, and nothing was ever connected in this process
    from chat.agent.mcp.connect_tool import ConnectTool
    from chat.agent.mcp.connections import pool
    from chat.agent.mcp.tools import tools_of

    ready, starting = await pool().offer(shared, limits)
    offered: list[AgentTool] = list(tools_of(ready))
    offered += [ConnectTool(c.spec, partial(_started, c), registry) for c in starting]
    if own and asker is not None:
        from chat.agent.mcp.oauth import user_pool

        open_now, later = await user_pool().offer(own, asker, limits)
        offered += tools_of(open_now)
        offered += [
            ConnectTool(spec, partial(_connected, spec, asker, limits), registry) for spec in later
        ]
    for tool in offered:
        if registry.get(tool.name) is None:  # a name already taken keeps its first tool
            registry.register(tool)


async def app_tool(
    specs: Iterable[ServerSpec], server: str, name: str, limits: McpLimits = DEFAULT_LIMITS
) -> McpTool | None:
    """The tool `name` of `server` as an app of that server may call it: one that declares an
    interface and lets apps call it (`_meta.ui.visibility`), on a server shared by the
    deployment and connected now; else None. An app reaches no other server's tools, and no
    tool of its own server that did not say apps may call it."""
    from chat.agent.mcp.apps import app_ui
    from chat.agent.mcp.connections import pool
    from chat.agent.mcp.tools import McpTool

    shared = [spec for spec in specs if spec.enabled and not spec.oauth and spec.name == server]
    if not shared:
        return None
    ready, _starting = await pool().offer(shared, limits)
    for connection in ready:
        for tool in connection.tools:
            ui = app_ui(tool)
            if tool.name == name and ui is not None and ui.for_app:
                return McpTool(connection, tool, shows_app=False)
    return None


async def _started(connection: Connection) -> list[McpTool]:
    from chat.agent.mcp.connections import pool
    from chat.agent.mcp.tools import tools_of

    await pool().opened(connection)
    if connection.client is None:
        raise ToolError(str(connection.reason or _("it is not connected")))
    return tools_of([connection])


async def _connected(spec: ServerSpec, asker: Asker, limits: McpLimits) -> list[McpTool]:
    from chat.agent.mcp.oauth import user_pool
    from chat.agent.mcp.tools import tools_of

    connection = await user_pool().connect_one(spec, asker, limits)
    if connection is None:
        raise ToolError(_("the user did not connect it"))
    return tools_of([connection])


def release_asker(asker: Asker) -> None:
    """The turn ended: its user's sessions no longer ask through it."""
    if "chat.agent.mcp.oauth" in sys.modules:
        from chat.agent.mcp.oauth import user_pool

        with suppress(RuntimeError):  # no running loop: nothing was opened
            user_pool().release(asker)
