"""The MCP servers of this deployment: those GLASSBOX_MCP_SERVERS declares and those admins
added. A name declared in settings wins over an admin row of the same name.

Every turn asks; the admin's rows are read at most every few seconds per process (at once
after a change made in this process), so a turn costs no query for them."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from django.conf import settings
from django.db.models.signals import post_delete, post_save

from chat.agent.mcp.config import (
    ServerConfigError,
    ServerSpec,
    declared_servers,
    spec_from_mapping,
)
from chat.agent.mcp.limits import McpLimits
from chat.servers.models import McpServer

logger = logging.getLogger("glassbox.mcp")

# Another process's admin change reaches this one within this many seconds.
FRESH_SECONDS = 5.0
_rows: tuple[float, list[ServerSpec]] | None = None


def settings_servers() -> list[ServerSpec]:
    """The servers GLASSBOX_MCP_SERVERS declares. Raises ServerConfigError."""
    return declared_servers(settings.GLASSBOX_MCP_SERVERS)


def mcp_limits() -> McpLimits:
    """The settings' limits for MCP sessions, handed to the agent's pools with each use."""
    return McpLimits(
        connect_timeout=settings.GLASSBOX_MCP_CONNECT_TIMEOUT,
        tool_timeout=settings.GLASSBOX_TOOL_TIMEOUT,
        result_chars=settings.GLASSBOX_MCP_RESULT_CHARS,
        workdir=Path(settings.BASE_DIR),
    )


async def configured_servers() -> list[ServerSpec]:
    global _rows
    declared_now = settings_servers()
    if _rows is None or _rows[0] < time.monotonic():
        _rows = (time.monotonic() + FRESH_SECONDS, await _admin_rows())
    taken = {spec.name for spec in declared_now}
    return declared_now + [spec for spec in _rows[1] if spec.name not in taken]


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
