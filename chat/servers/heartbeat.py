"""Each server process watches its MCP servers from the moment it starts: it opens their
sessions in the background, with the tools their last sessions listed (so a turn waits for
no server whose tools are known), opens a server an admin adds within a beat, and writes what
it sees of each server every beat: one McpServerSighting per process and server, which the
admin's health page shows for every process, marking those that stopped writing."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import socket
import sys
from collections.abc import Iterable
from contextlib import suppress
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone
from django.utils.crypto import salted_hmac

from chat.agent.mcp.config import ServerSpec
from chat.servers.configured import configured_servers, mcp_limits, settings_servers
from chat.servers.models import McpServerSighting

if TYPE_CHECKING:
    import mcp_types as types

    from chat.agent.mcp.connections import Connection

logger = logging.getLogger("glassbox.mcp")

# A process whose sighting is older than this many beats has stopped (or hangs).
STALE_BEATS = 3
# Sightings of processes gone this long are removed by the next process that starts.
FORGOTTEN_AFTER = timedelta(hours=1)
# How long a turn that comes before this process's first look waits for it.
FIRST_LOOK_WAIT = 2.0
_CONNECTIONS = "chat.agent.mcp.connections"
_TOOLS = "chat.agent.mcp.tools"
_USERS = "chat.agent.mcp.oauth"
_watching: set[asyncio.Task[None]] = set()
# Set once this process's first look opened its servers with their remembered tools (None
# where no watch runs: tests, commands).
_looked: asyncio.Event | None = None


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:100]


def stale_before(now: datetime) -> datetime:
    return now - timedelta(seconds=STALE_BEATS * settings.GLASSBOX_MCP_HEARTBEAT_SECONDS)


def listing_key(spec: ServerSpec) -> str:
    """Names the declaration a listing belongs to, without revealing it (its fingerprint
    hashes secrets; this keys that hash with the deployment's secret)."""
    return salted_hmac("glassbox.mcp.listing", spec.fingerprint, algorithm="sha256").hexdigest()


def watch_on_start() -> None:
    """Under Daphne only (as chat.turns.shutdown): the watch starts with the reactor, on the
    event loop that serves the turns, whose sessions it opens."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not hasattr(reactor, "_asyncioEventloop"):
        return  # not served by Daphne (tests, management commands)
    if any(spec.enabled for spec in settings_servers()):
        # Before the process serves: imported later, in a thread, the SDK would take the
        # GIL from the first turns (their time doubled, bench/first_status_cold.py).
        importlib.import_module(_TOOLS)
    reactor.callWhenRunning(start_watching)
    # Whatever stops the reactor (Ctrl+C, the drain after SIGTERM), it waits for this: a
    # stdio server is told to stop by its closed stdin and waited for (then killed), rather
    # than left to find its pipes gone when this process exits, and no session is reopened
    # or lost noisily meanwhile.
    reactor.addSystemEventTrigger("before", "shutdown", _stop_before_the_reactor)


def _stop_before_the_reactor() -> Any:
    from twisted.internet.defer import Deferred

    return Deferred.fromFuture(asyncio.ensure_future(stop_watching()))


async def stop_watching() -> None:
    """Ends the watch and closes this event loop's MCP sessions, each server's at once."""
    watching = list(_watching)
    for task in watching:
        task.cancel()
    await asyncio.gather(*watching, return_exceptions=True)
    # Only the modules already loaded hold sessions: none is imported to close nothing.
    closing = []
    if _CONNECTIONS in sys.modules:
        from chat.agent.mcp.connections import pool

        closing.append(pool().close())
    if _USERS in sys.modules:
        from chat.agent.mcp.oauth import user_pool

        closing.append(user_pool().close())
    await asyncio.gather(*closing)


def start_watching() -> asyncio.Task[None]:
    global _looked
    _looked = asyncio.Event()
    task = asyncio.get_event_loop().create_task(watch(worker_name(), timezone.now()))
    _watching.add(task)  # the loop keeps only a weak reference
    task.add_done_callback(_watching.discard)
    return task


async def watch(worker: str, started: datetime) -> None:
    first = True
    while True:
        connections: list[Connection] = []
        try:
            connections = await beat(worker, started, await configured_servers(), first=first)
            first = False
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # A database that does not answer says so every beat: one line each, no trace.
            logger.warning("MCP servers: this process's look failed (%s); trying again", exc)
        if _looked is not None:
            _looked.set()
        await next_beat(connections)


async def after_first_look() -> None:
    """A turn that comes right after the process started waits for its first look (a few
    database reads): else it would open the servers itself, without their remembered tools,
    and wait for them."""
    if _looked is not None and not _looked.is_set():
        with suppress(TimeoutError):
            async with asyncio.timeout(FIRST_LOOK_WAIT):
                await _looked.wait()


async def next_beat(connections: list[Connection]) -> None:
    """A beat later, or as soon as a first attempt at a session ends: the health page, and
    the next process to start, learn a server's tools once it listed them."""
    every = settings.GLASSBOX_MCP_HEARTBEAT_SECONDS
    first = {asyncio.ensure_future(c.tried.wait()) for c in connections if not c.tried.is_set()}
    if not first:
        await asyncio.sleep(every)
        return
    try:
        await asyncio.wait(first, timeout=every, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Also when the watch ends (the process stops): none is left pending.
        for waiting in first:
            waiting.cancel()


async def beat(
    worker: str, started: datetime, specs: Iterable[ServerSpec], *, first: bool = False
) -> list[Connection]:
    """Opens (in the background) the sessions these servers need, each new one with the
    tools a process listed before (its own, or another's), and writes this process's
    sighting of each."""
    # A server each user connects to is opened per user, by their turns (chat.agent.mcp.oauth).
    specs = [spec for spec in specs if spec.enabled and not spec.oauth]
    if not specs and _CONNECTIONS not in sys.modules:
        return []  # no server, and the SDK never loaded: nothing to open or to say
    if _TOOLS not in sys.modules:
        # Servers only an admin added (declared ones were imported before serving): the
        # SDK's import and the schema checker's cost hundreds of milliseconds, so in a
        # thread, and the process goes on answering meanwhile, if more slowly.
        await asyncio.to_thread(importlib.import_module, _TOOLS)
    from chat.agent.mcp.connections import pool

    if first:
        await McpServerSighting.objects.filter(
            updated_at__lt=timezone.now() - FORGOTTEN_AFTER
        ).adelete()
    opened = pool().connections
    new = [
        spec
        for spec in specs
        if spec.name not in opened or opened[spec.name].spec.fingerprint != spec.fingerprint
    ]
    remembered = await remembered_tools(new) if new else None
    connections = await pool().open(specs, remembered, mcp_limits())
    await write_sightings(worker, started, connections)
    return connections


async def remembered_tools(specs: list[ServerSpec]) -> dict[str, tuple[types.Tool, ...]]:
    """The tools each server listed last, in any process, under the same declaration."""
    import mcp_types as types
    from pydantic import ValidationError

    keys = {spec.name: listing_key(spec) for spec in specs}
    found: dict[str, tuple[types.Tool, ...]] = {}
    rows = McpServerSighting.objects.filter(server__in=keys, tools__isnull=False).order_by(
        "-updated_at"
    )
    async for row in rows.only("server", "tools", "listed_under"):
        if row.server in found or row.listed_under != keys[row.server]:
            continue
        try:
            found[row.server] = tuple(types.Tool.model_validate(tool) for tool in row.tools or ())
        except (ValidationError, TypeError):
            logger.warning("MCP server %s: its remembered tools are unreadable", row.server)
    return found


async def write_sightings(worker: str, started: datetime, connections: list[Connection]) -> None:
    from chat.agent.mcp.connections import health

    now = timezone.now()
    seen = health(c.spec.name for c in connections)
    for connection in connections:
        name = connection.spec.name
        state = seen[name]
        values: dict[str, Any] = {
            "state": state.state,
            # Up, what it listed but is not offered is its problem (chat.agent.mcp.screening).
            "reason": (state.reason or "; ".join(state.not_offered))[:300],
            "since": state.since,
            "sessions": state.sessions,
            "started_at": started,
            "updated_at": now,
        }
        if connection.listed:
            # Kept as it was while this process has listed nothing of its own yet.
            values["tools"] = [_dumped(tool) for tool in connection.listed]
            values["listed_under"] = listing_key(connection.spec)
        await McpServerSighting.objects.aupdate_or_create(
            worker=worker, server=name, defaults=values
        )
    await (
        McpServerSighting.objects.filter(worker=worker)
        .exclude(server__in=[c.spec.name for c in connections])
        .adelete()
    )


def _dumped(tool: types.Tool) -> dict[str, Any]:
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)
