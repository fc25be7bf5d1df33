"""The first question after a start: a new `python -m project.serve` process with the demo
MCP server (stdio) configured is asked "Tell me a joke", which needs no MCP tool, as soon as
it accepts connections; the time from sending the question to the answer's first event.

Two starts: the deployment's first (a fresh database: nobody has listed the demo server's
tools yet, and its first session, which the process began at start-up, is still opening: the
model is offered the server's connect tool in place of its tools, chat.agent.mcp.connect_tool,
and the joke calls none) and a restart (the previous process wrote the tools it listed);
beside them, the same first question to a process without MCP servers (what a first turn
costs anyway: modules imported, connections opened). Target: <= 100 ms after either."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, machine, percentile, report

from tests.support.servers import login, serve, start_daphne

QUESTION = "Tell me a joke"
ROUNDS = 3
DEMO = [
    {
        "name": "surveys",
        "command": sys.executable,
        "args": ["-m", "chat.agent.mcp.demo_server"],
        "env": {"GLASSBOX_DEMO_MCP_DELAY": "0"},
    }
]


async def first_event_ms(url: str) -> float:
    """Logs in, asks, and times the first status or text of the answer."""
    import websockets
    from websockets.typing import Subprotocol

    conversation, cookies = await asyncio.to_thread(login, url)
    async with websockets.connect(
        url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": url},
        subprotocols=[Subprotocol("glassbox.json")],
    ) as socket:
        sent = time.monotonic()
        await socket.send(json.dumps({"message": QUESTION}))
        first = None
        while True:
            event = json.loads(await asyncio.wait_for(socket.recv(), 60))
            if first is None and event["type"] in ("status", "text"):
                first = (time.monotonic() - sent) * 1000
            if event["type"] == "tool_call":
                raise RuntimeError(f"a joke called {event['tool']}")
            if event["type"] in ("done", "error"):
                break
    if first is None:
        raise RuntimeError("the answer had no status and no text")
    return first


def listed(database: Path, seconds: float = 30) -> None:
    """Until the process wrote the tools it listed (code without sightings: a second)."""
    deadline = time.monotonic() + seconds
    with sqlite3.connect(database) as connection:
        while time.monotonic() < deadline:
            try:
                query = "SELECT count(*) FROM chat_mcpserversighting WHERE tools IS NOT NULL"
                if connection.execute(query).fetchone()[0]:
                    return
            except sqlite3.OperationalError:
                time.sleep(1)  # no such table: the code before sightings
                return
            time.sleep(0.05)
    raise RuntimeError("the process never wrote the tools it listed")


def main() -> None:
    print(f"machine: {machine()} ({ROOT})")
    fresh: list[float] = []
    restarted: list[float] = []
    for _ in range(ROUNDS):
        with (
            tempfile.TemporaryDirectory() as work,
            serve(Path(work), mcp_opened=False, GLASSBOX_MCP_SERVERS=json.dumps(DEMO)) as server,
        ):
            fresh.append(asyncio.run(first_event_ms(server.url)))
            listed(Path(work) / "e2e.sqlite3")
            server.stop()
            again = start_daphne(server.env, seconds=300)  # a busy machine starts slowly
            try:
                restarted.append(asyncio.run(first_event_ms(again.url)))
            finally:
                again.stop()
    floor: list[float] = []
    for _ in range(ROUNDS):
        with tempfile.TemporaryDirectory() as work, serve(Path(work)) as server:
            floor.append(asyncio.run(first_event_ms(server.url)))
    rows = []
    named = (("first start", fresh), ("restart", restarted), ("no MCP server (floor)", floor))
    for name, values in named:
        rows += [
            (f"{name}: rounds", str(len(values))),
            (f"{name}: p50 first event (ms)", f"{percentile(values, 50):.1f}"),
            (f"{name}: max first event (ms)", f"{max(values):.1f}"),
        ]
    report("First answer event right after a start, demo MCP server configured", rows)


if __name__ == "__main__":
    main()
