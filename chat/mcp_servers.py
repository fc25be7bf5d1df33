"""The MCP servers of this deployment: those GLASSBOX_MCP_SERVERS declares and those admins
added. A name declared in settings wins over an admin row of the same name."""

from __future__ import annotations

import logging

from django.conf import settings

from chat.agent.mcp.config import ServerConfigError, ServerSpec, spec_from_mapping
from chat.models import McpServer

logger = logging.getLogger("glassbox.mcp")


async def configured_servers() -> list[ServerSpec]:
    declared: list[ServerSpec] = list(settings.GLASSBOX_MCP_SERVERS)
    taken = {spec.name for spec in declared}
    async for row in McpServer.objects.filter(enabled=True).exclude(name__in=taken):
        try:
            declared.append(spec_from_mapping(row.as_mapping(), f"server {row.name!r}"))
        except ServerConfigError as exc:
            # The admin form checks the same rules; a row edited around it is skipped, loudly.
            logger.warning("MCP server %s is skipped: %s", row.name, exc)
    return declared
