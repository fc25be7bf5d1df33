"""How long an MCP server waits for a person's answer once it is given: from the answer's
socket frame leaving the client to the server (a real `mcp` SDK process over stdio) receiving
it, by the CLOCK_MONOTONIC every process of the machine shares.

Answered on the socket whose process runs the turn (the answer is handed over at once), and,
when Redis is there, on a socket to a second Daphne on the same database (the answer goes
through the channel layer). The offline demo model calls the tool; target: under 50 ms."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from common import (
    BENCH_LIMITS,
    ROOT,
    conversations,
    machine,
    percentile,
    redis_url,
    report,
    serve,
    start_daphne,
)

from tests.support.live_questions import drained, live_socket, wait_for_answer

SERVERS = json.dumps(
    [{"name": "bench", "command": sys.executable, "args": [str(ROOT / "bench" / "mcp_server.py")]}]
)
ROUNDS = 20


async def waits_ms(asking_server, answering_server, conversation: str, cookies: str) -> list:
    """Each round's wait in ms: a question asked on one server's socket, answered on the
    other's (or the same) socket. Fresh sockets each round: a socket that sends more than
    20 frames in 10 s is closed as a flood."""
    waits = []
    for _ in range(ROUNDS):
        async with live_socket(asking_server, conversation, cookies) as asking:
            if answering_server is asking_server:
                waits.append(await wait_for_answer(asking, asking) * 1000)
                continue
            async with (
                live_socket(answering_server, conversation, cookies) as other,
                drained(other) as answering,
            ):
                waits.append(await wait_for_answer(asking, answering) * 1000)
    return waits


def _rows(name: str, waits: list[float]) -> list[tuple[str, str]]:
    return [
        (f"{name}: p50 (ms)", f"{percentile(waits, 50):.1f}"),
        (f"{name}: p99 (ms)", f"{percentile(waits, 99):.1f}"),
        (f"{name}: max (ms)", f"{max(waits):.1f}"),
    ]


def main() -> None:
    print(f"machine: {machine()}")
    rows: list[tuple[str, str]] = []
    with (
        redis_url() as redis,
        tempfile.TemporaryDirectory() as work,
        serve(
            Path(work),
            GLASSBOX_MCP_SERVERS=SERVERS,
            GLASSBOX_DEMO_DELAY="0",
            LOG_LEVEL="ERROR",
            GLASSBOX_TURNS_PER_MINUTE=BENCH_LIMITS["GLASSBOX_TURNS_PER_MINUTE"],
            GLASSBOX_MAX_CONCURRENT_TURNS=BENCH_LIMITS["GLASSBOX_MAX_CONCURRENT_TURNS"],
            REDIS_URL=redis or "",
        ) as server,
    ):
        (conversation,), cookies = conversations(server, 1)
        asyncio.run(waits_ms(server, server, conversation, cookies))  # warm up
        rows += _rows("answered in the turn's process", asyncio.run(
            waits_ms(server, server, conversation, cookies)
        ))  # fmt: skip
        if redis:
            other = start_daphne(server.env)
            try:
                rows += _rows("answered in another process", asyncio.run(
                    waits_ms(server, other, conversation, cookies)
                ))  # fmt: skip
            finally:
                other.stop()
        else:
            rows.append(("answered in another process", "skipped (no Redis)"))
    report(f"An MCP question's answer reaching its server ({ROUNDS} rounds)", rows)


if __name__ == "__main__":
    main()
