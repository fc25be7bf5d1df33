"""MCP servers for the tests: the test bench and the demo server, over stdio or streamable
HTTP, run as real processes with the `mcp` SDK. Over stdio each is forked from a zygote that
has imported the SDK (tests/support/zygote.py): the same server code in a process of its own,
without a second of import in each."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from chat.agent.mcp.config import ServerSpec, spec_from_mapping
from tests.support.ports import accepting, free_port

ROOT = Path(__file__).resolve().parents[2]
BENCH = "tests.support.mcp_server"
DEMO = "chat.agent.mcp.demo_server"
FORKED = Path(__file__).with_name("forked.py")


def stdio(name: str, module: str = BENCH, **env: str) -> ServerSpec:
    return _declared(name, _forked(module), env)


def stdio_unforked(name: str, module: str = BENCH, **env: str) -> ServerSpec:
    """The server over stdio, started as `python -m` itself: for a test of what Glassbox does
    to the process it started, such as its priority."""
    return _declared(name, [sys.executable, "-m", module], env)


def _declared(name: str, command: list[str], env: dict[str, str]) -> ServerSpec:
    return spec_from_mapping(
        {"name": name, "command": command[0], "args": command[1:], "env": env}
    )


def _forked(module: str) -> list[str]:
    """The command that runs `module` as `python -m` would, forked from the zygote."""
    return [sys.executable, "-I", "-S", str(FORKED), _zygote(), module]


_zygotes: dict[int, tuple[subprocess.Popen, str]] = {}


def _zygote() -> str:
    """The socket of this test process's zygote, started on first use."""
    known = _zygotes.get(os.getpid())
    if known and known[0].poll() is None:
        return known[1]
    folder = tempfile.mkdtemp(prefix="mcp-zygote-")
    path = str(Path(folder) / "socket")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.zygote", path], cwd=ROOT, stdin=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    # It listens before it imports: once the socket is there, servers can be asked for.
    while not Path(path).exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the MCP servers' zygote did not start")
        time.sleep(0.01)
    _zygotes[os.getpid()] = (process, path)
    atexit.register(_stop_zygote, process, folder)
    return path


def _stop_zygote(process: subprocess.Popen, folder: str) -> None:
    process.kill()
    shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def http_server(
    module: str = BENCH,
    *,
    sse: bool = False,
    port: int | None = None,
    environment: Mapping[str, str] | None = None,
    **env: str,
) -> Iterator[str]:
    """The server on a free port, or this one (streamable HTTP, or the legacy SSE
    transport), with `environment` and `env` in its environment; its URL once it accepts
    connections."""
    env = {**(environment or {}), **env}
    # A free port can be taken by another test process before the server binds it: the
    # server then exits at once, and starts again on another.
    for attempt in range(3):
        chosen = port or free_port()
        process, said = _start(module, sse, chosen, env)
        if _accepting(process, chosen):
            break
        process.kill()
        process.wait(10)
        if port or attempt == 2:
            reason = said.read_text()[-2000:]
            said.unlink()
            raise RuntimeError(f"the MCP server {module} did not start: {reason}")
        said.unlink()
    try:
        yield f"http://127.0.0.1:{chosen}/{'sse' if sse else 'mcp'}"
    finally:
        # Abruptly, as a server goes away; a graceful stop would wait for open streams.
        process.kill()
        process.wait(10)
        # The forked server dies with the process it was forked for, a moment later: once
        # the port refuses, a server started again on it can bind it.
        deadline = time.monotonic() + 10
        while accepting(chosen, timeout=0.2) and time.monotonic() < deadline:
            time.sleep(0.01)
        said.unlink(missing_ok=True)


def _start(
    module: str, sse: bool, port: int, env: dict[str, str]
) -> tuple[subprocess.Popen, Path]:
    said = Path(tempfile.mkstemp(prefix="mcp-server-", suffix=".log")[1])
    with said.open("wb") as log:
        process = subprocess.Popen(
            [*_forked(module), "--sse" if sse else "--http", str(port)],
            cwd=ROOT,
            env={"PATH": "/usr/bin:/bin", **env},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    return process, said


def _accepting(process: subprocess.Popen, port: int) -> bool:
    """Whether the server accepts connections, waiting while it starts (a loaded machine
    has taken more than 20 s to import the SDK); False once it has exited."""
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if accepting(port, timeout=1):
            return True
        time.sleep(0.05)
    return False
