"""The admin's MCP server health page shows every worker's view of every server: two
workers of `python -m project.serve --workers 2` each open the demo server when they start
and write what they see; a worker that dies is marked stale, and its replacement appears."""

from __future__ import annotations

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

import pytest

from tests.support.mcp import DEMO
from tests.support.processes import admin_session, children, wait_for
from tests.support.servers import ROOT, free_port, manage, services

pytestmark = pytest.mark.server

ROW = re.compile(
    r'<tr class="sighting( stale)?" data-server="([^"]+)" data-worker="([^"]+)">(.*?)</tr>', re.S
)


def sightings(opener, url: str) -> dict[str, tuple[bool, str]]:
    """worker -> (stale, state) of the demo server, as the page shows them."""
    page = opener.open(f"{url}/admin/chat/mcpserver/health/").read().decode()
    rows = {}
    for stale, server, worker, cells in ROW.findall(page):
        if server == "demo":
            state = re.search(r'<td class="state">(.*?)</td>', cells).group(1)
            rows[html.unescape(worker)] = (bool(stale), html.unescape(state))
    return rows


def test_the_health_page_shows_every_worker_and_marks_a_dead_one_stale(tmp_path):
    database, redis = services()
    import psycopg

    name = f"glassbox_health_{int(time.time() * 1000) % 10**8}"
    admin = database.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    demo = {"name": "demo", "command": sys.executable, "args": ["-m", DEMO],
            "env": {"GLASSBOX_DEMO_MCP_DELAY": "0"}}  # fmt: skip
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": database.rsplit("/", 1)[0] + "/" + name,
        "REDIS_URL": redis,
        "GLASSBOX_CHANNEL_PREFIX": f"health-{name}",
        "STATIC_ROOT": str(tmp_path / "static"),
        "OPENAI_API_KEY": "",
        "GLASSBOX_MCP_SERVERS": json.dumps([demo]),
        "GLASSBOX_MCP_HEARTBEAT_SECONDS": "0.3",
        "DJANGO_SUPERUSER_PASSWORD": "root-password",
    }
    try:
        root = ["createsuperuser", "--noinput", "--username", "root", "--email", "r@x.test"]
        for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"], root):
            manage(env, *command, "-v", "0")
        with tempfile.TemporaryFile() as log:
            _serve_and_check(env, free_port(), log)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _serve_and_check(env: dict[str, str], port: int, log) -> None:
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "project.serve", "--workers", "2", "-p", str(port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    host = socket.gethostname()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: len(children(supervisor.pid)) == 2, "two workers")
        wait_for(lambda: _accepting(port), "the port")
        opener = admin_session(url, "root", "root-password")
        workers = {f"{host}:{pid}" for pid in children(supervisor.pid)}

        def both_connected() -> bool:
            seen = sightings(opener, url)
            return all(seen.get(w) == (False, "connected") for w in workers)

        wait_for(both_connected, "both workers connected to the demo server")

        victim = min(children(supervisor.pid))
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(children(supervisor.pid) - {victim}) == 2, "a new worker")
        (newcomer,) = {f"{host}:{pid}" for pid in children(supervisor.pid)} - workers
        (survivor,) = workers - {f"{host}:{victim}"}

        def dead_one_stale() -> bool:
            seen = sightings(opener, url)
            return (
                seen.get(f"{host}:{victim}", (False, ""))[0]
                and seen.get(newcomer) == (False, "connected")
                and seen.get(survivor) == (False, "connected")
            )

        wait_for(dead_one_stale, "the dead worker marked stale and its replacement connected")
        assert sightings(opener, url)[f"{host}:{victim}"] == (True, "stale (was connected)")
    finally:
        supervisor.send_signal(signal.SIGTERM)
        try:
            supervisor.wait(timeout=30)
        except subprocess.TimeoutExpired:
            supervisor.kill()
            supervisor.wait()


def _accepting(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False
