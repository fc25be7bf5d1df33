"""The memory of a serving process that has started and serves nothing yet, and what it
imported to get there.

    python bench/idle_memory.py            # VmRSS after start-up warming, then after one turn
    python bench/idle_memory.py --imports  # and the packages imported at start, the largest first

`python -m project.serve` on a fresh SQLite database with an OpenAI-compatible provider (the
paced fake model), as the peer bench starts it. Idle means: the process listens and its RSS
has not moved for 2 s (start-up warming, project.warming, has run on its thread). Then one turn
over a socket, and the RSS again: what the first turn still loads; and how long the first and
a second turn took from the question to their first status line, what the first pays for
what it loads. Each question is asked `--pause` seconds (1 by default) after its socket
opened, as a person who opens the page reads before asking; `--pause 0` asks at once. With
--imports the server runs under `-X importtime`, which costs a little memory of its own, so
its RSS is not reported: it lists the packages imported at start, and those the first socket
and turn imported."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import conversations, fake_llm, glassbox, machine, report, turn_over_socket

SETTLED_FOR_S = 2.0
QUESTION = "How do I negotiate my salary?"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def settled_rss(pid: int, limit_s: float = 60) -> float:
    """The RSS once it has stayed the same for SETTLED_FOR_S (sampled every 0.1 s)."""
    deadline = time.monotonic() + limit_s
    last, since = rss_mib(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = rss_mib(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLED_FOR_S:
            break
    return last


def imported(log: str) -> list[tuple[str, str]]:
    """Top-level packages by the modules they brought in at start, with their import time."""
    modules: Counter[str] = Counter()
    micros: Counter[str] = Counter()
    for match in re.finditer(r"^import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)$", log, re.MULTILINE):
        package = match[2].split(".")[0]
        modules[package] += 1
        micros[package] += int(match[1])
    return [
        (package, f"{count} modules, {micros[package] / 1000:.0f} ms")
        for package, count in modules.most_common(25)
    ]


async def first_status_after_asking(
    server, conversation: str, cookies: str, pause_s: float
) -> float:
    """Milliseconds from the question, asked `pause_s` after its socket opened, to the turn's
    first status line."""
    asked: list[int] = []
    events = await turn_over_socket(
        server, conversation, cookies, QUESTION, pause_s=pause_s, asked=asked
    )
    for arrived, event in events:
        if event["type"] == "status":
            return (arrived - asked[0]) / 1e6
    raise RuntimeError(f"no status line in {events!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--imports", action="store_true")
    parser.add_argument(
        "--pause", type=float, default=1.0,
        help="seconds between a socket's opening and its question (0: asked at once)",
    )  # fmt: skip
    options = parser.parse_args()
    print(f"machine: {machine()}; load average at start: {os.getloadavg()}")
    print(f"each question asked {options.pause} s after its socket opened")
    settings = {"PYTHONPROFILEIMPORTTIME": "1"} if options.imports else {}
    with (
        tempfile.TemporaryDirectory() as work,
        fake_llm() as llm,
        glassbox(Path(work), llm, **settings) as server,
    ):
        pid = server.process.pid
        idle = settled_rss(pid)
        # How much it had logged when idle: the imports of its start (the log is read once it
        # has exited).
        started = os.fstat(server.log.fileno()).st_size
        ids, cookies = conversations(server, 2)
        first = asyncio.run(first_status_after_asking(server, ids[0], cookies, options.pause))
        after = settled_rss(pid)
        second = asyncio.run(first_status_after_asking(server, ids[1], cookies, options.pause))
        server.process.terminate()
        server.process.wait(timeout=30)
        log = server.output() if options.imports else ""
    if options.imports:
        at_start = log.encode()[:started].decode(errors="replace")
        report("imported at start, by package", imported(at_start))
        report("imported by the first socket and turn, by package", imported(log[len(at_start) :]))
        return
    report(
        "a serving process (python -m project.serve)",
        [("idle RSS after start-up warming", f"{idle:.1f} MiB"),
         ("RSS after its first turn", f"{after:.1f} MiB"),
         ("first turn: question to first status line", f"{first:.0f} ms"),
         ("second turn: question to first status line", f"{second:.0f} ms")],
    )  # fmt: skip


if __name__ == "__main__":
    main()
