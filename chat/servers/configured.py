"""The MCP servers of this deployment: those GLASSBOX_MCP_SERVERS declares and those admins
added. A name declared in settings wins over an admin row of the same name.

Every turn asks; the admin's rows are read at most every few seconds per process (at once
after a change made in this process), so a turn costs no query for them."""

from __future__ import annotations

import logging
import time

from django.db.models.signals import post_delete, post_save

from chat.agent.mcp.config import (
    ServerConfigError,
    ServerSpec,
    declared_servers,
    spec_from_mapping,
)
from chat.servers.models import McpServer

logger = logging.getLogger("glassbox.mcp")

# Another process's admin change reaches this one within this many seconds.
FRESH_SECONDS = 5.0
_rows: tuple[float, list[ServerSpec]] | None = None


async def configured_servers() -> list[ServerSpec]:
    global _rows
    declared = declared_servers()
    if _rows is None or _rows[0] < time.monotonic():
        _rows = (time.monotonic() + FRESH_SECONDS, await _admin_rows())
    taken = {spec.name for spec in declared}
    return declared + [spec for spec in _rows[1] if spec.name not in taken]


async def _admin_rows() -> list[ServerSpec]:
    specs = []
    async for row in McpServer.objects.filter(enabled=True):
        try:
            specs.append(spec_from_mapping(row.as_mapping(), f"server {row.name!r}"))
        except ServerConfigError as exc:
            # The admin form checks the same rules; a row edited around it is skipped, loudly.
            logger.warning("MCP server %s is skipped: %s", row.name, exc)
    return specs


def forget(**_kwargs: object) -> None:
    global _rows
    _rows = None


post_save.connect(forget, sender=McpServer, dispatch_uid="mcp_servers_forget_saved")
post_delete.connect(forget, sender=McpServer, dispatch_uid="mcp_servers_forget_deleted")
