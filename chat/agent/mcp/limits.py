"""How long this process waits for MCP servers and how much of a result it keeps, handed in
by whoever opens the sessions (chat.servers.configured reads them from the settings): the
agent reads no settings. The defaults are the settings' own, for the library used alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class McpLimits:
    # Seconds to open a session and list its tools; a turn waits at most this for a server.
    connect_timeout: float = 10.0
    # Seconds one tool call may take (a stream's read waits a minute longer).
    tool_timeout: float = 20.0
    # Characters of a tool's result the model reads; the rest is cut, saying so.
    result_chars: int = 8000
    # Where stdio servers start (the project's directory); None: this process's.
    workdir: Path | None = None


DEFAULT_LIMITS = McpLimits()
