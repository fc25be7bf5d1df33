"""What each server process writes of its MCP servers every heartbeat, as the admin's health
page shows it: state, last error in words, sessions opened and tools, a silent process's
marked stale, a process's sightings of servers no longer declared removed."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.test import AsyncClient
from django.utils import timezone

from chat.agent.mcp.config import spec_from_mapping
from chat.servers.heartbeat import beat
from chat.servers.models import McpServerSighting
from tests.support.mcp import stdio
from tests.support.ports import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_each_process_view_is_shown_and_a_silent_one_is_stale(
    settings, sessions, admin_user
):
    down = spec_from_mapping({"name": "down", "url": f"http://127.0.0.1:{free_port()}/mcp"})
    bench = stdio("bench")
    settings.GLASSBOX_MCP_SERVERS = [bench, down]
    connections = await sessions.connect([bench, down])
    async with asyncio.timeout(20):
        await connections[0].up.wait()
    started = timezone.now()
    await beat("host:1", started, [bench, down], first=True)
    await beat("host:2", started, [bench, down])
    # host:2 stops writing: its last look is older than three heartbeats.
    long_ago = timezone.now() - timedelta(seconds=4 * settings.GLASSBOX_MCP_HEARTBEAT_SECONDS)
    await McpServerSighting.objects.filter(worker="host:2").aupdate(updated_at=long_ago)

    client = AsyncClient()
    await client.aforce_login(admin_user)
    page = (await client.get("/admin/servers/mcpserver/health/")).content.decode()

    def row(server: str, worker: str) -> str:
        start = f'data-server="{server}" data-worker="{worker}">'
        return page.split(start)[1].split("</tr>")[0]

    assert '<td class="state">connected</td>' in row("bench", "host:1")
    assert "count" in row("bench", "host:1") and "<td>1</td>" in row("bench", "host:1")
    assert '<td class="state">retrying</td>' in row("down", "host:1")
    assert "it cannot be reached" in row("down", "host:1")
    assert '<td class="state">stale (was connected)</td>' in row("bench", "host:2")
    assert '<tr class="sighting stale" data-server="bench" data-worker="host:2">' in page

    # The setting drops a server: this process's sighting of it goes with it.
    await beat("host:1", started, [bench])
    kept = {(s.worker, s.server) async for s in McpServerSighting.objects.all()}
    assert ("host:1", "down") not in kept and ("host:1", "bench") in kept
