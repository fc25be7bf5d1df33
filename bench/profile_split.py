"""Where each server's CPU per turn goes, side by side, from the peer bench's py-spy pass.

    PROFILE=1 ../shared/peer-bench/run_pair.sh        # writes <out>/profiles/
    .venv/bin/python bench/profile_split.py <out>/profiles

`bench/html_clients.py` prints the same split for HTML and JSON clients when run with
BENCH_PROFILE=<prefix>.

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


def per_turn(profile: Path, cpu_per_turn_ms: float) -> dict[str, float]:
    samples = split(profile)
    total = sum(samples.values()) or 1
    return {name: cpu_per_turn_ms * count / total for name, count in samples.items()}


def print_table(title: str, columns: dict[str, dict[str, float]]) -> None:
    """Buckets down, one column per profile, and the difference of the last two."""
    names = sorted({n for column in columns.values() for n in column}, key=_order)
    first, second = list(columns)[-2:]
    print(f"\n## {title} (ms per turn)\n")
    print(f"| | {' | '.join(columns)} | {second} − {first} |")
    print("| --- |" + " --- |" * (len(columns) + 1))
    for name in [*names, "total"]:
        values = [
            sum(column.values()) if name == "total" else column.get(name, 0.0)
            for column in columns.values()
        ]
        shown = " | ".join(f"{value:.1f}" for value in values)
        print(f"| {name} | {shown} | {values[-1] - values[-2]:+.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profiles", type=Path, help="run_pair.sh's <out>/profiles folder")
    parser.add_argument("--conc", default="100", help="the concurrency phase profiled")
    options = parser.parse_args()
    phase = f"conc {options.conc}"
    columns = {}
    for system in ("Chainlit", "Glassbox"):
        name = system.lower()
        result = json.loads((options.profiles / f"{name}.json").read_text())[phase]
        profile = options.profiles / f"p-{name}-conc{options.conc}.txt"
        columns[system] = per_turn(profile, result["server_cpu_per_turn_ms"])
    print_table(f"CPU per turn by where it goes, {options.conc} sessions", columns)


def _order(name: str) -> int:
    order = ["database (queries and the thread that runs them)", *(n for n, _ in BUCKETS)]
    return order.index(name) if name in order else len(order)


if __name__ == "__main__":
    main()
