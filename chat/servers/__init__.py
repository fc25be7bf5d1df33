"""The MCP servers admins add, as a Django app of its own (label `servers`): their rows and
migrations, their admin pages, the record of every change and the health page, and each
user's OAuth grants at them. The agent runtime (chat.agent.mcp) is handed the servers as
plain declarations (ServerSpec) by the turn's runner, through `configured.configured_servers`;
each server process opens them when it starts and writes what it sees of them
(`heartbeat`)."""
