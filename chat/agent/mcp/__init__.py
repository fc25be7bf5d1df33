"""Tools from MCP servers: their configuration, one reused session per server and process,
and the adapter that makes their tools the agent's."""
