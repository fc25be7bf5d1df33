"""The MCP servers admins add: their rows' admin pages, the record of every change and the
health page. The agent runtime (chat.agent.mcp) is handed the servers as plain declarations
(ServerSpec) by the turn's runner, through `configured.configured_servers`; each server
process opens them when it starts and writes what it sees of them (`heartbeat`)."""

from __future__ import annotations
