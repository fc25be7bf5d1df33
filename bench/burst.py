"""A burst of sessions on `python -m project.serve --workers 2` with PostgreSQL and Redis: 10,
100, 300 and 1,000 sessions, each arriving within 2 s on a fresh conversation and socket and
asking one question (the model: 0.3 s to the first byte, a tool call, 60 tokens at 20/s).

    eval "$(bash .ci/services)"; export DATABASE_URL REDIS_URL
    .venv/bin/python bench/burst.py                   # BENCH_SESSIONS=10,100 for a short run
    bash .ci/services stop "$CI_PGDATA"

Printed for each step: turns complete, handshakes the server refused or dropped (each one
the client had to open again; the goal is none), first status p50 / p99 (from the model
sending the tool's name to the client reading the line; the goal is p99 under 1 s), the
turn's p99 from question to `done`, the servers' CPU per turn and each process's peak RSS.
Nothing here retries quietly: a refused handshake is counted before the client tries again.
The DATABASE_URL's database is migrated and seeded; run it on a throwaway one."""

from __future__ import annotations

import asyncio
import os
import random
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import (
    REJECTED_HANDSHAKES,
    conversations,
    cpu_seconds,
    fake_llm,
    machine,
    peak_memory_mib,
    percentile,
    report,
    turn_over_socket,
)
from workers import first_status_ms, served

SESSIONS = [int(n) for n in os.environ.get("BENCH_SESSIONS", "10,100,300,1000").split(",")]
ARRIVAL_S = float(os.environ.get("BENCH_ARRIVAL_S", "2"))
WORKERS = 2
QUESTION = "How do I negotiate my salary?"
LLM_PACE = ("--ttft", "0.3", "--tokens", "60", "--rate", "20", "--chunk", "4")


async def burst(server, ids: list[str], cookies: str) -> list:
    async def one(conversation: str):
        await asyncio.sleep(random.random() * ARRIVAL_S)
        asked = time.monotonic_ns()
        try:
            events = await turn_over_socket(server, conversation, cookies, QUESTION)
        except Exception as problem:
            return problem
        return asked, events

    return await asyncio.gather(*(one(c) for c in ids))


def step(server, ids: list[str], cookies: str) -> list[tuple[str, str]]:
    REJECTED_HANDSHAKES.clear()
    pids = server.pids()[1:]  # the workers, not the supervisor
    load = os.getloadavg()[0]
    cpu = sum(cpu_seconds(pid) for pid in pids)
    results = asyncio.run(burst(server, ids, cookies))
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu
    firsts, durations, failures = [], [], []
    for result in results:
        if isinstance(result, BaseException):
            failures.append(f"{type(result).__name__}: {result}")
            continue
        asked, events = result
        last = events[-1][1]
        if last.get("type") != "done" or last.get("state") != "complete":
            failures.append(f"ended with {last}")
            continue
        firsts.append(first_status_ms(events))
        durations.append((events[-1][0] - asked) / 1e9)
    rows = [
        ("load average at the step's start", f"{load:.2f}"),
        ("turns complete", f"{len(firsts)} / {len(ids)}"),
        ("handshakes refused or dropped", str(len(REJECTED_HANDSHAKES))),
        ("first status p50 / p99",
         f"{percentile(firsts, 50):.0f} / {percentile(firsts, 99):.0f} ms"),
        ("turn p99, question to done", f"{percentile(durations, 99):.2f} s"),
        ("server CPU per turn (both workers)", f"{cpu / len(ids) * 1000:.0f} ms"),
        ("peak RSS of each worker",
         " + ".join(f"{peak_memory_mib(pid):.0f}" for pid in pids) + " MiB"),
    ]  # fmt: skip
    if failures or REJECTED_HANDSHAKES:
        rows.append(("first problems", "; ".join((failures + REJECTED_HANDSHAKES)[:3])))
    return rows


def main() -> None:
    database, redis = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not database.startswith("postgres") or not redis:
        sys.exit('needs DATABASE_URL (PostgreSQL) and REDIS_URL: eval "$(bash .ci/services)"')
    # Every socket is a descriptor here and in a worker, which inherits the limit.
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # Other servers may share this Redis: their groups stay apart from ours.
    os.environ["GLASSBOX_CHANNEL_PREFIX"] = f"burst-{uuid.uuid4().hex[:8]}"
    print(f"machine: {machine()}; load average at start: {os.getloadavg()}")
    print(f"sessions arriving within {ARRIVAL_S:.0f} s; model: {' '.join(LLM_PACE)}")
    with (
        tempfile.TemporaryDirectory() as work,
        fake_llm(*LLM_PACE) as llm,
        served(Path(work) / "served", llm, redis, WORKERS) as server,
    ):
        ids, cookies = conversations(server, sum(SESSIONS) + 4)
        asyncio.run(burst(server, ids[-4:], cookies))  # warm up, both workers likely
        ids = ids[:-4]
        for sessions in SESSIONS:
            mine, ids = ids[:sessions], ids[sessions:]
            report(f"{sessions} sessions, --workers {WORKERS}", step(server, mine, cookies))


if __name__ == "__main__":
    main()
