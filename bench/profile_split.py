"""Where each server's CPU per turn goes, side by side, from the peer bench's py-spy pass.

    PROFILE=1 ../shared/peer-bench/run_pair.sh        # writes <out>/profiles/
    .venv/bin/python bench/profile_split.py <out>/profiles

Each sample is put in one bucket, by the innermost frame that names one, except that any
sample in the database (Django's ORM, a driver, or the thread that runs them) is the
database's. A bucket's share of the samples times the CPU per turn the same run measured
gives its milliseconds per turn; the profiler's own overhead is spread evenly.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

DATABASE = ("django/db/", "sqlite3", "psycopg", "sqlalchemy/", "aiosqlite/")
# Innermost match wins: a sample in json called from the web server is the web server's
# only when no more specific frame claims it first.
BUCKETS = [
    ("model client (openai SDK, httpx)", ("openai/", "httpx", "httpcore", "h11/", "anyio/")),
    ("sockets and web server", (
        "twisted/internet/tcp", "twisted/internet/abstract", "daphne/", "autobahn/", "channels/",
        "project/layers", "uvicorn/", "starlette/", "websockets/", "wsproto/", "socketio/",
        "engineio/",
    )),
    ("the app (turns, rendering, JSON)", (
        "chat/", "activity/", "project/", "chainlit/", "cl_app", "json/", "pydantic", "django/",
    )),
    # The loop's own Python frames; under uvloop its C code shows as the frame that runs it.
    ("event loop", ("asyncio/", "uvloop", "asyncioreactor", "twisted/")),
]  # fmt: skip
OTHER = "other"
FILE = re.compile(r"\(([^()]*?):\d+\)")


def bucket(stack: str) -> str:
    frames = stack.split(";")
    if frames[0].startswith("Thread._bootstrap") or any(d in stack for d in DATABASE):
        return "database (queries and the thread that runs them)"
    for frame in reversed(frames):
        where = FILE.search(frame)
        path = where.group(1) if where else frame
        for name, marks in BUCKETS:
            if any(mark in path for mark in marks):
                return name
    return OTHER


def split(profile: Path) -> Counter[str]:
    samples: Counter[str] = Counter()
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            samples[bucket(stack)] += int(count)
    return samples


def per_turn(profile: Path, result: Path, phase: str) -> dict[str, float]:
    cpu = json.loads(result.read_text())[phase]["server_cpu_per_turn_ms"]
    samples = split(profile)
    total = sum(samples.values())
    return {name: cpu * count / total for name, count in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profiles", type=Path, help="run_pair.sh's <out>/profiles folder")
    parser.add_argument("--conc", default="100", help="the concurrency phase profiled")
    options = parser.parse_args()
    phase = f"conc {options.conc}"
    systems = {}
    for system in ("glassbox", "chainlit"):
        profile = options.profiles / f"p-{system}-conc{options.conc}.txt"
        systems[system] = per_turn(profile, options.profiles / f"{system}.json", phase)
    names = sorted({n for split in systems.values() for n in split}, key=_order)
    print(f"## CPU per turn by where it goes, {options.conc} sessions (ms)\n")
    print("| | Glassbox | Chainlit | difference |")
    print("| --- | --- | --- | --- |")
    for name in [*names, "total"]:
        gb, cl = (_total(s) if name == "total" else s.get(name, 0.0) for s in systems.values())
        print(f"| {name} | {gb:.1f} | {cl:.1f} | {gb - cl:+.1f} |")


def _order(name: str) -> int:
    order = ["database (queries and the thread that runs them)", *(n for n, _ in BUCKETS)]
    return order.index(name) if name in order else len(order)


def _total(split: dict[str, float]) -> float:
    return sum(split.values())


if __name__ == "__main__":
    main()
