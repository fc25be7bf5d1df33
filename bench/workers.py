"""One process per core: turns per second at the latency target with `python -m project.serve
--workers 1` and `--workers 2`, both on the Redis layer (the one a deployment of several
processes uses) and the same database.

Turns arrive at a steady rate (fresh conversation and socket each; the model: 0.3 s to the
first byte, a tool call, 60 tokens at 20/s), 10 s per step, the rate rising step by step. A
step passes when every turn is complete, the first status p99 (from the model sending the
tool's name to the client reading the line) is within the target, and the turns keep pace
(question to `done`, p99, within 0.5 s of a turn alone). The figure is the
highest passing rate. Each step also shows the CPU of the clients (this process) and of the
whole machine, which the fake model, Redis and the clients share with the servers.
REDIS_URL and DATABASE_URL are used when set; otherwise a throwaway redis-server and
SQLite."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from common import (
    accepting,
    conversations,
    cpu_seconds,
    fake_llm,
    free_port,
    machine,
    machine_busy_seconds,
    manage,
    percentile,
    redis_url,
    report,
    turn_over_socket,
)

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = float(os.environ.get("BENCH_TARGET_MS", "50"))
STEP_SECONDS = float(os.environ.get("BENCH_STEP_SECONDS", "10"))
# A server that cannot keep up still shows its status lines fast once the model answers:
# its turns start late instead. So a step also needs every turn, question to `done`, within
# this much of a turn alone.
PACE_SLACK_S = float(os.environ.get("BENCH_PACE_SLACK_S", "0.5"))
RATES = [int(r) for r in os.environ.get("BENCH_RATES", "4,8,12,16,20,24,28,32,36,40").split(",")]


class Served:
    def __init__(self, url: str, env: dict[str, str], process: subprocess.Popen) -> None:
        self.url, self.env, self.process = url, env, process

    def pids(self) -> list[int]:
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [pid, *map(int, children)]


@contextmanager
def served(work: Path, llm: str, redis: str, workers: int, daphne_args: tuple[str, ...] = ()):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": os.environ.get("DATABASE_URL") or f"sqlite:///{work / 'bench.sqlite3'}",
        "REDIS_URL": redis,
        "STATIC_ROOT": str(work / "static"),
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": llm,
        "GLASSBOX_MODEL": "bench",
        "GLASSBOX_PROVIDER_RETRIES": "0",
        "GLASSBOX_TURNS_PER_MINUTE": "1000000",
        "GLASSBOX_MAX_CONCURRENT_TURNS": "100000",
        "LOG_LEVEL": "ERROR",
    }
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"], ["seed_demo"]):
        manage(env, *command, "-v", "0")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "project.serve", "--workers", str(workers), "-p", str(port),
         *daphne_args],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    server = Served(f"http://127.0.0.1:{port}", env, process)
    try:
        deadline = time.monotonic() + 60
        while len(server.pids()) < workers + (workers > 1):
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.2)
        _wait_port(port)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def _wait_port(port: int) -> None:
    for _ in range(300):
        if accepting(port):
            return
        time.sleep(0.1)
    raise RuntimeError("the server did not listen")


def first_status_ms(events: list) -> float:
    for arrived, event in events:
        if event["type"] == "status" and event.get("call_id", "").startswith("call_"):
            return (arrived - int(event["call_id"][5:])) / 1e6
    raise RuntimeError("no status line")


async def step(server, ids, cookies, rate: int) -> dict:
    count = int(rate * STEP_SECONDS)

    async def one(n: int):
        await asyncio.sleep(n / rate + random.random() / rate)
        asked = time.monotonic_ns()
        events = await turn_over_socket(server, next(ids), cookies, "How do I negotiate?")
        return asked, events

    results = await asyncio.gather(*(one(n) for n in range(count)), return_exceptions=True)
    latencies, durations, complete = [], [], 0
    for result in results:
        if isinstance(result, BaseException):
            continue
        asked, events = result
        last = events[-1][1]
        if last.get("type") == "done" and last.get("state") == "complete":
            complete += 1
            latencies.append(first_status_ms(events))
            durations.append((events[-1][0] - asked) / 1e9)
    return {
        "turns": count,
        "complete": complete,
        "p99": percentile(latencies, 99),
        "turn_p99": percentile(durations, 99),
    }


async def idle_turn_seconds(server, ids, cookies) -> float:
    """How long one turn takes, question to `done`, on a server doing nothing else."""
    asked = time.monotonic_ns()
    events = await turn_over_socket(server, next(ids), cookies, "How do I negotiate?")
    return (events[-1][0] - asked) / 1e9


def sweep(title: str, work: Path, llm: str, redis: str, workers: int) -> float:
    work.mkdir()
    total = sum(int(rate * STEP_SECONDS) for rate in RATES) + 2  # and the warm-up, the idle turn
    with served(work, llm, redis, workers) as server:
        made, cookies = conversations(server, total)
        ids = iter(made)
        asyncio.run(turn_over_socket(server, next(ids), cookies, "warm up"))
        idle = asyncio.run(idle_turn_seconds(server, ids, cookies))
        best, rows = 0.0, [("one turn alone, question to done", f"{idle:.2f} s")]
        for rate in RATES:
            before = sum(cpu_seconds(pid) for pid in server.pids())
            busy, client, started = machine_busy_seconds(), time.process_time(), time.monotonic()
            figures = asyncio.run(step(server, ids, cookies, rate))
            cpu = sum(cpu_seconds(pid) for pid in server.pids()) - before
            wall = time.monotonic() - started
            busy = (machine_busy_seconds() - busy) / wall
            client = (time.process_time() - client) / wall
            keeps_pace = figures["turn_p99"] <= idle + PACE_SLACK_S
            ok = (
                figures["complete"] == figures["turns"]
                and figures["p99"] <= TARGET_MS
                and keeps_pace
            )
            rows.append((
                f"{rate} turns/s offered",
                f"{figures['complete']}/{figures['turns']} complete, first status p99 "
                f"{figures['p99']:.0f} ms, turn p99 {figures['turn_p99']:.2f} s, "
                f"server CPU {cpu / wall:.2f} cores, "
                f"{cpu / max(figures['turns'], 1) * 1000:.0f} ms/turn; clients {client:.2f}, "
                f"whole machine {busy:.2f} of {os.cpu_count()} cores {'ok' if ok else 'over'}",
            ))  # fmt: skip
            if not ok:
                break
            best = rate
        rows.append(("highest rate within the target", f"{best} turns/s"))
        report(title, rows)
        return best


def main() -> None:
    print(f"machine: {machine()}; target: first status p99 <= {TARGET_MS:.0f} ms")
    llm_pace = ("--ttft", "0.3", "--tokens", "60", "--rate", "20", "--chunk", "4")
    with tempfile.TemporaryDirectory() as work, fake_llm(*llm_pace) as llm, redis_url() as redis:
        if redis is None:
            print("\n## skipped: needs REDIS_URL or redis-server")
            return
        one = sweep("one process (--workers 1)", Path(work) / "one", llm, redis, 1)
        two = sweep("two processes (--workers 2)", Path(work) / "two", llm, redis, 2)
        ratio = f"{two / one:.2f}x" if one else "n/a"
        report("Scaling", [("turns/s within the target, 2 processes / 1", ratio)])


if __name__ == "__main__":
    main()
