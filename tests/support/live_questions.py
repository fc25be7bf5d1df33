"""An MCP server's question on live Daphne servers: asked on one socket, answered on another
(of the same process or not), and how long the server waited for the answer once it was
given. The server is the test bench's `time_answer` tool (tests/support/mcp_server.py) or
the benchmarks' (bench/mcp_server.py): it says when the answer reached it, by the
CLOCK_MONOTONIC every process of the machine reads alike."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from contextlib import asynccontextmanager

import websockets
from websockets.typing import Subprotocol

QUESTION = "bench__time_answer {}"
REACHED = re.compile(r"reached the server at (\d+\.\d+)")


@asynccontextmanager
async def live_socket(server, conversation: str, cookies: str):
    """A logged-in JSON socket to a live server's conversation."""
    async with websockets.connect(
        server.url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": server.url},
        subprotocols=[Subprotocol("glassbox.json")],
        max_size=None,
        open_timeout=60,
    ) as socket:
        yield socket


@asynccontextmanager
async def drained(socket):
    """A socket only written to: what it receives meanwhile is read and dropped."""

    async def drain() -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for _ in socket:
                pass

    reading = asyncio.ensure_future(drain())
    try:
        yield socket
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def wait_for_answer(asking, answering) -> float:
    """Asks on `asking` (a question that calls `time_answer`) and answers its card on
    `answering` (the same socket, or a drained one); the seconds from the answer's frame to
    the server holding it."""
    await asking.send(json.dumps({"message": QUESTION}))
    while True:
        event = json.loads(await asking.recv())
        waiting = [q for q in event.get("questions", []) if q["state"] == "waiting"]
        if event["type"] == "questions" and waiting:
            break
    given = time.monotonic()
    answer = {"elicitation": waiting[0]["id"], "action": "accept", "answer": {"word": "now"}}
    await answering.send(json.dumps(answer))
    text = ""
    while True:
        event = json.loads(await asking.recv())
        text += event["content"] if event["type"] == "text" else ""
        if event["type"] == "done":
            found = REACHED.search(text)
            assert found, f"the server did not say when: {text!r}"
            return float(found.group(1)) - given
