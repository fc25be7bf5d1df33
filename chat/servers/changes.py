"""Who may change which MCP server, and the record of every change.

A stdio server is a program this machine runs, as Glassbox's own user, in the next turn of
any user: adding one, or changing, enabling, disabling or deleting one, is a superuser's
decision (or the deployment's, through GLASSBOX_MCP_SERVERS). Other admins manage
streamable HTTP servers only. Every change goes through `server_save` or `servers_delete`,
which check that rule and record who made the change, in the change's transaction."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction

from chat.servers.models import McpServer, McpServerChange

RUNS_PROGRAMS = (
    "Only superusers may add, change or delete stdio servers: a stdio server runs a "
    "command on this machine. Other admins manage streamable HTTP servers."
)
MASK = "••••••"
# The fields compared to say what a change changed (secrets by value, shown by name only).
COMPARED = (
    "name", "transport", "url", "headers", "command", "args", "env", "enabled", "tools",
    "approval", "client_credentials", "sampling",
)  # fmt: skip


ENABLED, DISABLED = McpServerChange.Action.ENABLED, McpServerChange.Action.DISABLED


def may_run_programs(user: Any) -> bool:
    return bool(user.is_active and user.is_superuser)


def may_change(user: Any, server: McpServer) -> bool:
    """Whether this user may change or delete this server as it is stored."""
    return server.transport != McpServer.Transport.STDIO or may_run_programs(user)


def declaration(server: McpServer) -> dict:
    """The server as GLASSBOX_MCP_SERVERS would declare it, secrets masked."""
    data = server.as_mapping()
    for secrets in ("headers", "env"):
        if secrets in data:
            data[secrets] = dict.fromkeys(data[secrets], MASK)
    # The form stores only the names of the secret's variable or file; a row written around
    # it may hold a secret itself.
    grant = data.get("client_credentials") or {}
    if "client_secret" in grant:
        data["client_credentials"] = {**grant, "client_secret": MASK}
    return data


@transaction.atomic
def server_save(*, server: McpServer, by: Any) -> McpServerChange | None:
    """Saves an added or changed server and records the change; a save that changes
    nothing records nothing."""
    before = McpServer.objects.select_for_update().filter(pk=server.pk).first()
    for row in (before, server):
        if row is not None and not may_change(by, row):
            raise PermissionDenied(RUNS_PROGRAMS)
    server.save()
    if before is None:
        action, changed = McpServerChange.Action.ADDED, []
    else:
        changed = [f for f in COMPARED if getattr(before, f) != getattr(server, f)]
        if not changed:
            return None
        action = McpServerChange.Action.CHANGED
        if changed == ["enabled"]:
            action = ENABLED if server.enabled else DISABLED
    return McpServerChange.objects.create(
        by=by, server=server.name, action=action, fields=changed, declaration=declaration(server)
    )


@transaction.atomic
def servers_delete(*, servers: Iterable[McpServer], by: Any) -> int:
    """Deletes these servers, each recorded with the declaration it removed; refuses all of
    them if the user may not delete one."""
    servers = list(servers)
    if not all(may_change(by, server) for server in servers):
        raise PermissionDenied(RUNS_PROGRAMS)
    for server in servers:
        McpServerChange.objects.create(
            by=by,
            server=server.name,
            action=McpServerChange.Action.DELETED,
            declaration=declaration(server),
        )
        server.delete()
    return len(servers)
