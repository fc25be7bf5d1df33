"""One process per core: `python -m project.serve --workers N` starts N Daphne processes on
one listening socket, sharing turns through Redis, replaces one that dies, and stops them
all on SIGTERM. Each opens its MCP servers when it starts, and the admin's health page shows
every worker's view of them, a dead worker's marked stale."""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import websockets
from websockets.typing import Subprotocol

from tests.support.mcp import DEMO
from tests.support.ports import accepting, free_port
from tests.support.processes import admin_session
from tests.support.servers import ROOT, login, manage, services

pytestmark = pytest.mark.server


def children(pid: int) -> set[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return {int(child) for child in text.split()}


def wait_for(condition, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        time.sleep(0.1)


async def turn(url: str, conversation: str, cookies: str) -> list[dict]:
    async with websockets.connect(
        url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": url},
        subprotocols=[Subprotocol("glassbox.json")],
    ) as ws:
        await ws.send(json.dumps({"message": "How do I negotiate my salary?"}))
        events = [json.loads(await asyncio.wait_for(ws.recv(), 30))]
        while events[-1]["type"] not in ("done", "error"):
            events.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
        return events


def test_more_than_one_worker_without_redis_is_refused_with_the_reason():
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "project.settings"}
    done = subprocess.run(
        [sys.executable, "-m", "project.serve", "--workers", "2", "-p", str(free_port())],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--workers above 1 needs REDIS_URL" in done.stderr


def test_workers_share_one_port_replace_a_dead_one_and_stop_together(tmp_path):
    """And every worker's view of the demo MCP server is on the admin's health page, the dead
    one's marked stale once it stops writing."""
    database, redis = services()
    import psycopg

    name = f"glassbox_workers_{int(time.time() * 1000) % 10**8}"
    admin = database.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": database.rsplit("/", 1)[0] + "/" + name,
        "REDIS_URL": redis,
        # Servers of other tests share the Redis, with users and sessions of the same ids: a
        # password changed there would close these sockets.
        "GLASSBOX_CHANNEL_PREFIX": f"test-{uuid.uuid4().hex[:8]}",
        "STATIC_ROOT": str(tmp_path / "static"),
        "GLASSBOX_DEMO_DELAY": "0.005",
        "OPENAI_API_KEY": "",
        "GLASSBOX_TURNS_PER_MINUTE": "1000",
        "GLASSBOX_MAX_CONCURRENT_TURNS": "10",
        "GLASSBOX_MCP_SERVERS": json.dumps([MCP_DEMO]),
        "GLASSBOX_MCP_HEARTBEAT_SECONDS": "0.3",
    }
    port = free_port()
    with tempfile.TemporaryFile() as log:
        try:
            _serve_and_check(env, port, log)
        except BaseException:
            # The workers' own account, shown with the failure (pytest prints what a failed
            # test wrote).
            log.seek(0)
            print(log.read().decode(errors="replace")[-20_000:])
            raise
        finally:
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _serve_and_check(env: dict[str, str], port: int, log) -> None:
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"], ["seed_demo"]):
        manage(env, *command, "-v", "0")
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "project.serve", "--workers", "2", "-p", str(port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(lambda: accepting(port), "the port")
        wait_for(lambda: len(children(supervisor.pid)) == 2, "two workers")
        url = f"http://127.0.0.1:{port}"
        conversation, cookies = login(url)
        others = json.loads(manage(env, "shell", "-c", _NEW_CONVERSATIONS).splitlines()[-1])

        async def many() -> list[list[dict]]:
            return await asyncio.gather(*(turn(url, c, cookies) for c in [conversation, *others]))

        for events in asyncio.run(many()):
            assert events[-1] == {**events[-1], "type": "done", "state": "complete"}
        admin = admin_session(url, "root", "root-password")
        host = socket.gethostname()
        first = {f"{host}:{pid}" for pid in children(supervisor.pid)}
        wait_for(lambda: seen_connected(admin, url) >= first, "each worker's view of the server")

        # A worker that dies is replaced, and turns go on.
        victim = min(children(supervisor.pid))
        subprocess.run(["kill", "-KILL", str(victim)], check=True)

        def replaced() -> bool:
            now = children(supervisor.pid)
            return len(now) == 2 and victim not in now

        wait_for(replaced, "a new worker")
        wait_for(lambda: accepting(port), "the port")
        events = asyncio.run(turn(url, others[0], cookies))
        assert events[-1] == {**events[-1], "type": "done", "state": "complete"}
        now = {f"{host}:{pid}" for pid in children(supervisor.pid)}
        wait_for(
            lambda: (
                sightings(admin, url).get(f"{host}:{victim}") == "stale (was connected)"
                and seen_connected(admin, url) >= now
            ),
            "the dead worker marked stale, its replacement's view shown",
        )

        workers = children(supervisor.pid)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=30) == 0
        assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()


MCP_DEMO = {"name": "demo", "command": sys.executable, "args": ["-m", DEMO],
            "env": {"GLASSBOX_DEMO_MCP_DELAY": "0"}}  # fmt: skip
SIGHTING = re.compile(
    r'<tr class="sighting(?: stale)?" data-server="demo" data-worker="([^"]+)">.*?'
    r'<td class="state">(.*?)</td>',
    re.S,
)


def sightings(admin, url: str) -> dict[str, str]:
    """Each worker's state of the demo server, as the admin's health page shows it."""
    page = admin.open(f"{url}/admin/servers/mcpserver/health/").read().decode()
    return {html.unescape(worker): state for worker, state in SIGHTING.findall(page)}


def seen_connected(admin, url: str) -> set[str]:
    return {worker for worker, state in sightings(admin, url).items() if state == "connected"}


_NEW_CONVERSATIONS = (
    "import json; from chat.models import Conversation; "
    "from django.contrib.auth.models import User; u = User.objects.get(username='demo'); "
    "User.objects.create_superuser('root', 'r@x.test', 'root-password'); "
    "print(json.dumps([str(Conversation.objects.create(owner=u).pk) for _ in range(5)]))"
)
