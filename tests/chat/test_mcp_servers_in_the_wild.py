"""MCP servers as teams ship them, not only as our own bench behaves: a server without the
optional change stream is a working server, and one that fails at once is retried with a
backoff that grows (real processes, built with the `mcp` SDK)."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import threading

import pytest

from chat.agent.mcp import connections
from chat.agent.mcp.config import spec_from_mapping
from tests.support.mcp import http_server, stdio
from tests.support.ports import free_port
from tests.support.sockets import json_turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_a_server_without_the_change_stream_connects_once_and_works(
    settings, sessions, alice, alice_conversation
):
    plain = stdio("plain", TESTBENCH_NO_LISTEN="1")
    settings.GLASSBOX_MCP_SERVERS = [plain]
    (connection,) = await sessions.connect([plain])
    async with asyncio.timeout(20):
        await connection.up.wait()
        while connection.listening is None:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await connection.listening  # it gave up listening, quietly
    assert connection.client is not None and not connection.broken.is_set()

    events = await json_turn(alice_conversation, alice, 'plain__count {"steps": 2}', 20)
    assert "counted to 2" in "".join(e["content"] for e in events if e["type"] == "text")
    assert connection.sessions == 1  # one process, one session, all along


async def test_a_server_that_fails_right_after_connecting_is_retried_ever_more_slowly(
    settings, sessions, monkeypatch
):
    monkeypatch.setattr(connections, "FIRST_RETRY", 0.05)
    fragile = stdio("fragile", TESTBENCH_FRAGILE="1")
    (connection,) = await sessions.connect([fragile])
    async with asyncio.timeout(30):
        while connection.sessions < 4:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    # Each session broke at once: the wait doubles instead of starting over at each connect.
    assert connection.waits[:3] == [0.05, 0.1, 0.2]


async def test_a_legacy_sse_server_is_spoken_to_over_sse(
    settings, sessions, alice, alice_conversation
):
    with http_server(sse=True) as url:
        legacy = spec_from_mapping({"name": "legacy", "url": url})
        assert legacy.transport == "sse"
        settings.GLASSBOX_MCP_SERVERS = [legacy]
        events = await json_turn(alice_conversation, alice, 'legacy__count {"steps": 3}', 20)
    assert any(e["type"] == "status" and "progress" in e for e in events)  # live progress
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert (result["ok"], result["progress"], result["progress_count"]) == (True, 3, 3)
    assert "counted to 3" in "".join(e["content"] for e in events if e["type"] == "text")


@contextlib.contextmanager
def refusing_server(status: int):
    """An HTTP endpoint that answers every request with `status`, as a server behind a
    gateway does when the credentials are wrong."""

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"no")

        do_GET = do_DELETE = do_POST

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/mcp"
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (401, "it refused the credentials (HTTP 401: unauthorized)"),
        (403, "it refused the credentials (HTTP 403: unauthorized)"),
        (500, "it answered HTTP 500"),
    ],
)
async def test_a_refused_session_says_why_in_words(sessions, status, reason):
    with refusing_server(status) as url:
        spec = spec_from_mapping({"name": "guarded", "url": url})
        (connection,) = await sessions.connect([spec])
        async with asyncio.timeout(20):
            await connection.tried.wait()
    assert connection.client is None and str(connection.reason) == reason


async def test_the_admin_shows_every_servers_health(settings, sessions, admin_user):
    from django.test import AsyncClient

    from chat.servers.models import McpServer

    down = spec_from_mapping({"name": "down", "url": f"http://127.0.0.1:{free_port()}/mcp"})
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench"), down, stdio("idle")]
    await McpServer.objects.acreate(
        name="paused", transport=McpServer.Transport.STDIO, command="python", enabled=False
    )
    bench, down_connection = await sessions.connect([stdio("bench"), down])
    async with asyncio.timeout(20):
        await bench.up.wait()
        await down_connection.tried.wait()
    client = AsyncClient()
    await client.aforce_login(admin_user)
    page = (await client.get("/admin/servers/mcpserver/health/")).content.decode()

    def row(name: str) -> str:
        return page.split(f'<tr class="server-{name}">')[1].split("</tr>")[0]

    assert '<td class="state">connected</td>' in row("bench")
    assert "count" in row("bench") and "GLASSBOX_MCP_SERVERS" in row("bench")
    assert '<td class="state">retrying</td>' in row("down")
    assert "it cannot be reached" in row("down") and " UTC" in row("down")
    assert "not opened in this process yet" in row("idle")
    assert '<td class="state">disabled</td>' in row("paused") and "<td>admin</td>" in row("paused")
    listing = (await client.get("/admin/servers/mcpserver/")).content.decode()
    assert "/admin/servers/mcpserver/health/" in listing


@pytest.mark.parametrize(
    "env",
    [
        {"TESTBENCH_LEGACY": "1", "TESTBENCH_NO_GET": "1"},
        {"TESTBENCH_LEGACY": "1", "TESTBENCH_NO_GET": "1", "TESTBENCH_SESSION_400": "1"},
        {"TESTBENCH_LEGACY": "1"},
    ],
    ids=["404-found-by-the-call", "400-found-by-the-call", "found-by-the-get-stream-or-the-call"],
)
async def test_a_restarted_http_server_gets_a_new_session_and_the_call_runs_once(
    settings, sessions, alice, alice_conversation, tmp_path, env
):
    """A session-based server that restarts while Glassbox is idle has forgotten the
    session: the next call opens a new one and runs there, once. Without a GET stream
    (405) nothing notices the restart before the call does."""
    port = free_port()
    with http_server(port=port, **env) as url:
        spec = spec_from_mapping({"name": "restarting", "url": url, "approval": []})
        settings.GLASSBOX_MCP_SERVERS = [spec]
        (connection,) = await sessions.connect([spec])
        async with asyncio.timeout(20):
            await connection.up.wait()
    ledger = tmp_path / "ledger"
    with http_server(port=port, TESTBENCH_LEDGER=str(ledger), **env):
        events = await json_turn(
            alice_conversation, alice, 'restarting__delete_record {"record": "r-17"}', 30
        )
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"], result
    assert "deleted r-17" in "".join(e["content"] for e in events if e["type"] == "text")
    assert ledger.read_text().splitlines() == ["deleted r-17"]  # ran once, not twice
    assert connection.sessions == 2


async def test_a_server_that_forgets_every_session_is_not_called_twice(
    settings, sessions, alice, alice_conversation, tmp_path
):
    ledger = tmp_path / "ledger"
    env = {"TESTBENCH_LEGACY": "1", "TESTBENCH_FORGETFUL": "1", "TESTBENCH_LEDGER": str(ledger)}
    with http_server(environment=env) as url:
        spec = spec_from_mapping({"name": "amnesiac", "url": url, "approval": []})
        settings.GLASSBOX_MCP_SERVERS = [spec]
        events = await json_turn(
            alice_conversation, alice, 'amnesiac__delete_record {"record": "r-18"}', 30
        )
        (connection,) = await sessions.connect([spec])
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert not result["ok"]
    assert "the amnesiac server is unreachable: it forgot the new session at once" in str(result)
    assert not ledger.exists()  # one new session, one more try, then it stops
    assert connection.sessions == 2


async def test_a_stdio_server_that_exits_between_calls_is_noticed_at_once(
    settings, sessions, monkeypatch
):
    """No call and no change stream to find it out: the end of its output says it."""
    monkeypatch.setattr(connections, "FIRST_RETRY", 0.05)
    gone = stdio("gone", TESTBENCH_FRAGILE="1", TESTBENCH_NO_LISTEN="1")
    (connection,) = await sessions.connect([gone])
    async with asyncio.timeout(20):
        await connection.up.wait()
        while connection.up.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert str(connection.reason) == "its process exited"
    assert connection.tools == []  # not offered while it is gone
    async with asyncio.timeout(20):
        while connection.sessions < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.01)  # and started again, without anyone calling it


async def test_a_tool_that_runs_only_as_a_task_is_not_offered(sessions):
    """Glassbox does not drive MCP tasks: a tool that says it runs only as one would fail
    every call. One that may run as a task is an ordinary tool."""
    with http_server(TESTBENCH_LEGACY="1") as url:
        spec = spec_from_mapping({"name": "tasks", "url": url})
        (connection,) = await sessions.connect([spec])
        async with asyncio.timeout(20):
            await connection.up.wait()
        listed = {tool.name: tool for tool in connection.listed}
        offered = {tool.name for tool in connection.tools}
    assert listed["research"].execution.task_support == "required"  # as the server said
    assert "research" not in offered
    assert {"summarize", "count"} <= offered
