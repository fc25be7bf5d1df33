"""The test MCP servers forked from a zygote (tests/support/zygote.py) behave as the process
Glassbox started: they read and write its pipes, live in its folder (and its environment: the
tests of the servers' TESTBENCH_ settings), end with it however it ends, and it ends as they
do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.support import mcp
from tests.support.processes import children, wait_for

HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def start(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """A bench server as Glassbox starts one, and the pid of the server forked for it."""
    command = mcp._forked(mcp.BENCH)
    forks = mcp._zygotes[os.getpid()][0].pid
    before = children(forks)
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    wait_for(lambda: children(forks) - before, "the forked server")
    (server,) = children(forks) - before
    return process, server


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_forked_server_answers_on_the_askers_pipes_in_its_folder(tmp_path):
    process, server = start(tmp_path)
    assert process.stdin and process.stdout
    process.stdin.write(json.dumps(HELLO).encode() + b"\n")
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    assert answer["result"]["serverInfo"]["name"] == "testbench"
    assert Path(f"/proc/{server}/cwd").resolve() == tmp_path.resolve()

    # Its input closed, the server ends, and the process Glassbox started ends as it did.
    process.stdin.close()
    assert process.wait(30) == 0
    wait_for(lambda: not alive(server), "the server's end")


def test_a_killed_asker_takes_its_server_with_it(tmp_path):
    process, server = start(tmp_path)
    process.kill()
    process.wait(10)
    wait_for(lambda: not alive(server), "the server's end", seconds=5)


def test_a_signal_to_the_asker_reaches_the_server_and_the_asker_ends_as_it_did(tmp_path):
    process, server = start(tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == -signal.SIGTERM
    assert not alive(server)
