"""Stopping `make run` is quiet: Ctrl+C (SIGINT to the terminal's process group) or a plain
SIGTERM stops Glassbox and the demo MCP server it runs over stdio, with no traceback, no
warning and no word of a restart, also in the middle of a call to that server; the MCP server
is closed, not left behind. The demo server
on its own stops as quietly: at Ctrl+C in a terminal of its own, and when its client is
killed in the middle of a call."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets

from tests.support.mcp import DEMO
from tests.support.processes import children
from tests.support.servers import ROOT, Server, login, serve

# The demo MCP server as `make run` declares it (the Makefile's DEMO_MCP).
MAKE_RUN_MCP = json.dumps([{"name": "surveys", "command": sys.executable, "args": ["-m", DEMO]}])
# What a clean stop never says.
NOISE = ("Traceback", "WARNING", "ERROR", "restart", "Task was destroyed")

pytestmark = pytest.mark.own_site


@pytest.mark.server
@pytest.mark.parametrize("stop", ["ctrl_c", "sigterm"])
def test_stopping_the_demo_says_nothing_wrong_and_stops_its_mcp_server(tmp_path, stop):
    with serve(tmp_path, terminal=True, GLASSBOX_MCP_SERVERS=MAKE_RUN_MCP) as server:
        # `serve` waited for the first attempt at the server: its session is open.
        assert sighting(tmp_path / "e2e.sqlite3", "surveys") == "connected"
        mcp_servers = children(server.process.pid)
        assert len(mcp_servers) == 1
        if stop == "ctrl_c":
            server.interrupt()
        else:
            server.process.terminate()
        assert server.process.wait(timeout=30) == 0
        said = server.output()
    assert "MCP server surveys: connected" in said
    for noise in NOISE:
        assert noise not in said, said
    # Closed before the process ended, not orphaned to find its pipes gone.
    assert not any(alive(pid) for pid in mcp_servers)


@pytest.mark.server
def test_ctrl_c_in_the_middle_of_an_mcp_call_stops_as_quietly(tmp_path):
    with serve(tmp_path, terminal=True, GLASSBOX_MCP_SERVERS=MAKE_RUN_MCP) as server:
        conversation, cookies = login(server.url)
        asyncio.run(interrupt_mid_call(server, conversation, cookies))
        assert server.process.wait(timeout=30) == 0
        said = server.output()
    for noise in NOISE:
        assert noise not in said, said


async def interrupt_mid_call(server: Server, conversation: str, cookies: str) -> None:
    """Asks for the demo server's slow tool over the page's socket, and presses Ctrl+C once
    the tool reported its first progress."""
    async with websockets.connect(
        server.url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": server.url},
        subprotocols=["glassbox.json"],
    ) as socket:
        await socket.send(json.dumps({"message": "Compare five salary surveys for an engineer"}))
        while "progress" not in json.loads(await asyncio.wait_for(socket.recv(), 30)):
            pass
        server.interrupt()
        with contextlib.suppress(websockets.ConnectionClosed):
            while True:
                await asyncio.wait_for(socket.recv(), 30)


def test_the_demo_mcp_server_stops_quietly_at_ctrl_c_in_a_terminal_of_its_own():
    with demo_mcp_server() as server:
        ask(server, "initialize", INITIALIZE, 1)
        assert b'"result"' in server.stdout.readline()
        os.killpg(server.pid, signal.SIGINT)
        # Stopped by the signal, as Python stops at Ctrl+C, without waiting for stdin.
        assert server.wait(timeout=30) == -signal.SIGINT
        assert server.stderr.read() == b""


def test_the_demo_mcp_server_stops_quietly_when_its_client_is_killed_mid_call():
    with demo_mcp_server(GLASSBOX_DEMO_MCP_DELAY="0.2") as server:
        ask(server, "initialize", INITIALIZE, 1)
        server.stdout.readline()
        ask(server, "notifications/initialized", {})
        call = {"name": "compare_salary_surveys", "arguments": {"role": "engineer"}}
        ask(server, "tools/call", {**call, "_meta": {"progressToken": 1}}, 2)
        assert b"notifications/progress" in server.stdout.readline()
        # The client's end of both pipes goes, as when its process is killed: the server's
        # next progress report finds nobody to read it.
        server.stdout.close()
        server.stdin.close()
        assert server.wait(timeout=30) == 0
        assert server.stderr.read() == b""


INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


@contextlib.contextmanager
def demo_mcp_server(**env: str) -> Iterator[subprocess.Popen[bytes]]:
    """The demo server over stdio, started as a shell starts it in a terminal: a process
    group of its own, SIGINT at its default."""
    server = subprocess.Popen(
        [sys.executable, "-m", DEMO],
        cwd=ROOT,
        env={**os.environ, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=0,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        yield server
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
        for pipe in (server.stdin, server.stdout, server.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


def ask(server: subprocess.Popen[bytes], method: str, params: dict, id: int | None = None):
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        message["id"] = id
    assert server.stdin is not None
    server.stdin.write(json.dumps(message).encode() + b"\n")
    server.stdin.flush()


def sighting(database: Path, server: str) -> str:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        query = "SELECT state FROM chat_mcpserversighting WHERE server = ?"
        return connection.execute(query, (server,)).fetchone()[0]


def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped (it has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
