"""First status latency: from the moment the fake LLM sends a tool's name to the moment the
status line reaches the client, with 1 and with 100 concurrent turns, and with 1 while the
machine is busy (one process spinning on each core, as other servers would). Targets:
p50 <= 5 ms, p99 <= 25 ms."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from common import (
    REJECTED_HANDSHAKES,
    conversations,
    fake_llm,
    glassbox,
    machine,
    percentile,
    report,
    turn_over_socket,
)

QUESTION = "How do I negotiate my salary?"


def latency_ms(events) -> float:
    for arrived, event in events:
        if event.get("type") == "status" and event.get("call_id", "").startswith("call_"):
            return (arrived - int(event["call_id"][5:])) / 1e6
    raise RuntimeError(f"no status line in {events!r}")


async def measure(server, conversation_ids, cookies, concurrent: int, rounds: int) -> list:
    """`concurrent` clients, each asking `rounds` questions one after another, starting at
    random moments within the first second, so turns are in flight together without all
    reaching the tool call in the same millisecond."""
    latencies: list[float] = []

    async def client(conversation: str) -> None:
        await asyncio.sleep(random.random() if concurrent > 1 else 0)
        for _ in range(rounds):
            latencies.append(
                latency_ms(await turn_over_socket(server, conversation, cookies, QUESTION))
            )

    await asyncio.gather(*(client(c) for c in conversation_ids[:concurrent]))
    return latencies


@contextmanager
def busy_machine():
    """A process spinning on each core for as long as the block runs."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main() -> None:
    print(f"machine: {machine()}")
    with (
        tempfile.TemporaryDirectory() as work,
        # A model at a realistic pace: 0.3 s to the first byte, 150 tokens at 60 a second.
        fake_llm("--ttft", "0.3", "--tokens", "150", "--rate", "60") as llm,
        glassbox(Path(work), llm) as server,
    ):
        ids, cookies = conversations(server, 100)
        asyncio.run(measure(server, ids, cookies, 1, 3))  # warm up
        rows = []
        for concurrent, rounds, busy in ((1, 30, False), (100, 2, False), (1, 30, True)):
            with busy_machine() if busy else contextlib.nullcontext():
                values = asyncio.run(measure(server, ids, cookies, concurrent, rounds))
            name = f"{concurrent} concurrent{', machine busy' if busy else ''}"
            rows += [
                (f"{name}: turns", f"{len(values)}"),
                (f"{name}: p50 first status (ms)", f"{percentile(values, 50):.2f}"),
                (f"{name}: p99 first status (ms)", f"{percentile(values, 99):.2f}"),
            ]
        rows.append(("handshakes refused and retried", str(len(REJECTED_HANDSHAKES))))
        report("First status latency (target p50 <= 5 ms, p99 <= 25 ms)", rows)


if __name__ == "__main__":
    main()
