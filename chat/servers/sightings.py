"""Every server process's view of every MCP server, as their last sightings say
(chat.servers.heartbeat writes them): for the admin's health page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from chat.servers.heartbeat import stale_before
from chat.servers.models import McpServerSighting


@dataclass(frozen=True, slots=True)
class Sighting:
    server: str
    worker: str
    state: str
    since: datetime | None
    reason: str
    sessions: int
    tools: tuple[str, ...]
    started_at: datetime
    updated_at: datetime
    # The process stopped writing: it stopped, or hangs.
    stale: bool


def sightings() -> list[Sighting]:
    stale = stale_before(timezone.now())
    return [
        Sighting(
            server=row.server,
            worker=row.worker,
            state=row.state,
            since=row.since,
            reason=row.reason,
            sessions=row.sessions,
            tools=tuple(_names(row.tools)),
            started_at=row.started_at,
            updated_at=row.updated_at,
            stale=row.updated_at < stale,
        )
        for row in McpServerSighting.objects.order_by("server", "worker")
    ]


def _names(tools: object) -> list[str]:
    if not isinstance(tools, list):
        return []
    return [str(tool.get("name", "")) for tool in tools if isinstance(tool, dict)]
