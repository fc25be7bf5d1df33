"""MCP servers for the tests: the test bench and the demo server, over stdio or streamable
HTTP, run as real processes with the `mcp` SDK."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from chat.agent.mcp.config import ServerSpec, spec_from_mapping

ROOT = Path(__file__).resolve().parents[2]
BENCH = "tests.support.mcp_server"
DEMO = "chat.agent.mcp.demo_server"


def stdio(name: str, module: str = BENCH, **env: str) -> ServerSpec:
    return spec_from_mapping(
        {"name": name, "command": sys.executable, "args": ["-m", module], "env": env}
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def http_server(
    module: str = BENCH, *, sse: bool = False, port: int | None = None, **env: str
) -> Iterator[str]:
    """The server on a free port, or this one (streamable HTTP, or the legacy SSE
    transport); its URL once it accepts connections."""
    port = port or free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--sse" if sse else "--http", str(port)],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"
    try:
        # Only a server that never opens its port waits this long (a busy machine's start
        # has taken more than 20 s).
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the MCP server {module} did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        # Abruptly, as a server goes away; a graceful stop would wait for open streams.
        process.kill()
        process.wait(10)
