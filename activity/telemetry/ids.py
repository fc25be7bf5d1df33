"""A feed's trace and span ids, derived from the feed: a turn exported live and again from
history has the same ids, the admin shows the id a trace backend finds it by, and the
`traceparent` its MCP requests carry (chat.agent.traceparent) names the very tool span
exported for the call, so a server's own spans join the turn's trace."""

from __future__ import annotations

import hashlib
from datetime import datetime


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("/".join(str(part) for part in parts).encode()).digest()


def trace_id(feed_id: int, started_at: datetime) -> int:
    """128 bits, never zero (an invalid id in OpenTelemetry); the start time keeps feeds of
    different databases apart."""
    return int.from_bytes(_digest("glassbox-feed", feed_id, started_at.isoformat())[:16]) or 1


def span_id(trace: int, key: str) -> int:
    """64 bits, never zero, for one part of the turn ("turn", "model/0", "tool/call_1")."""
    return int.from_bytes(_digest(trace, key)[:8]) or 1


def tool_span_id(trace: int, call_id: str) -> int:
    """The span of one tool call: the exported span and the MCP request's parent."""
    return span_id(trace, f"tool/{call_id}")


def trace_id_hex(feed_id: int, started_at: datetime) -> str:
    """As trace backends show it: 32 hex digits."""
    return f"{trace_id(feed_id, started_at):032x}"
