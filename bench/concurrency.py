"""Concurrency: 500 turns at once on one Daphne process (in-memory channel layer), then on two
Daphne processes sharing Redis. Every turn must complete with every line and all its text;
figures: the gap between frames of one turn while its answer streams (p50, p99, max), wall
time, server CPU and peak memory."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import tempfile
import time
from pathlib import Path

from common import (
    REJECTED_HANDSHAKES,
    conversations,
    cpu_seconds,
    fake_llm,
    glassbox,
    machine,
    peak_memory_mib,
    percentile,
    profiled,
    redis_url,
    report,
    start_daphne,
    turn_over_socket,
)

TURNS = int(os.environ.get("BENCH_TURNS", "500"))
TOKENS, RATE, CHUNK = 60, 20, 4
# Clients arrive within this many seconds, as people do, not in one millisecond.
ARRIVAL = 2.0
EXPECTED_TEXT = "".join(f"w{n % 10}{' ' * (CHUNK - 2)}" for n in range(TOKENS))
EXPECTED_LINES = [
    "Searching the knowledge base…",
    "Looking up salary negotiation",
    re.compile(r"Found \d+ documents?|No matching documents"),
    "Writing the answer…",
    "Done",
]


def problems_of(events: list) -> list[str]:
    """What a turn's client missed; empty when it saw every line and all the text."""
    messages = [e["message"] for _, e in events if e["type"] == "status"]
    problems = []
    for line in EXPECTED_LINES:
        found = any(
            line.fullmatch(m) if isinstance(line, re.Pattern) else m == line for m in messages
        )
        if not found:
            problems.append(f"missing line {getattr(line, 'pattern', line)!r}")
    text = "".join(e["content"] for _, e in events if e["type"] == "text")
    if text != EXPECTED_TEXT:
        problems.append(f"text {len(text)} of {len(EXPECTED_TEXT)} characters")
    last = events[-1][1] if events else {}
    if last.get("type") != "done" or last.get("state") != "complete":
        problems.append(f"ended with {last!r}")
    return problems


def streaming_gaps_ms(events: list) -> list[float]:
    """Gaps between consecutive frames from the first text frame to the end: what a reader
    feels as a stall (the tool call and the model's own pauses come before)."""
    times = [t for t, e in events]
    first_text = next((i for i, (_, e) in enumerate(events) if e["type"] == "text"), None)
    if first_text is None:
        return []
    return [(b - a) / 1e6 for a, b in itertools.pairwise(times[first_text:])]


async def all_turns(servers, ids: list[str], cookies: str) -> list:
    async def client(n: int, conversation: str):
        await asyncio.sleep(random.random() * ARRIVAL)
        server = servers[n % len(servers)]
        return await turn_over_socket(server, conversation, cookies, "How do I negotiate?")

    return await asyncio.gather(*(client(n, c) for n, c in enumerate(ids)))


def measure(title: str, servers, ids, cookies) -> None:
    pids = [server.process.pid for server in servers]
    before = sum(cpu_seconds(pid) for pid in pids)
    REJECTED_HANDSHAKES.clear()
    started = time.monotonic()
    with profiled(pids):
        results = asyncio.run(all_turns(servers, ids, cookies))
    wall = time.monotonic() - started
    cpu = sum(cpu_seconds(pid) for pid in pids) - before
    failed = [(n, p) for n, events in enumerate(results) if (p := problems_of(events))]
    gaps = [gap for events in results for gap in streaming_gaps_ms(events)]
    frames = sum(len(events) for events in results)
    rows = [
        ("turns complete with every line and all text", f"{len(results) - len(failed)} / {TURNS}"),
        ("frames received", f"{frames:,}"),
        ("gap between frames while streaming p50 (ms)", f"{percentile(gaps, 50):.1f}"),
        ("gap between frames while streaming p99 (ms)", f"{percentile(gaps, 99):.1f}"),
        ("gap between frames while streaming max (ms)", f"{max(gaps, default=0):.1f}"),
        ("wall time for all turns (s)", f"{wall:.1f}"),
        ("server CPU, all processes (s)", f"{cpu:.1f}"),
        ("server CPU per turn (ms)", f"{cpu / TURNS * 1000:.1f}"),
        ("peak memory per process (MiB)", ", ".join(f"{peak_memory_mib(p):.0f}" for p in pids)),
        ("handshakes refused and retried", str(len(REJECTED_HANDSHAKES))),
    ]
    report(title, rows)
    for n, problems in failed[:5]:
        print(f"  turn {n}: {'; '.join(problems)}")


def print_first_error(server) -> None:
    log = server.said()
    start = log.find("Exception inside application")
    if start >= 0:
        print("\n".join(log[start:].splitlines()[:80]))


def main() -> None:
    print(f"machine: {machine()}")
    # A model at a realistic pace: 0.3 s to the first byte, 60 tokens at 20 a second.
    llm_pace = ("--ttft", "0.3", "--tokens", str(TOKENS), "--rate", str(RATE))
    with tempfile.TemporaryDirectory() as work, fake_llm(*llm_pace) as llm:
        one = Path(work) / "one"
        one.mkdir()
        with glassbox(one, llm) as server:
            ids, cookies = conversations(server, TURNS)
            measure(f"{TURNS} concurrent turns, one Daphne process, in-memory layer",
                    [server], ids, cookies)  # fmt: skip
        with redis_url() as redis:
            if redis is None:
                print("\n## Two Daphne processes with Redis: skipped (no redis-server)")
                return
            two = Path(work) / "two"
            two.mkdir()
            with glassbox(two, llm, REDIS_URL=redis) as first:
                second = start_daphne(first.env)
                try:
                    ids, cookies = conversations(first, TURNS)
                    measure(f"{TURNS} concurrent turns, two Daphne processes, Redis layer",
                            [first, second], ids, cookies)  # fmt: skip
                except Exception:
                    for server in (first, second):
                        print_first_error(server)
                    raise
                finally:
                    second.stop()


if __name__ == "__main__":
    main()
