"""MCP servers for the tests: the test bench and the demo server, over stdio or streamable
HTTP, run as real processes with the `mcp` SDK."""

from __future__ import annotations

import contextlib
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


def stdio(name: str, module: str = BENCH, **env: str) -> ServerSpec:
    return spec_from_mapping(
        {"name": name, "command": sys.executable, "args": ["-m", module], "env": env}
    )


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
        said.unlink(missing_ok=True)


def _start(
    module: str, sse: bool, port: int, env: dict[str, str]
) -> tuple[subprocess.Popen, Path]:
    said = Path(tempfile.mkstemp(prefix="mcp-server-", suffix=".log")[1])
    with said.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", module, "--sse" if sse else "--http", str(port)],
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
