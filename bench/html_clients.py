"""Browsers beside programs: the same turns with clients that take the HTML fragments (what a
page receives) and with JSON clients, each phase on a fresh Daphne process. Figures: server
CPU per turn, the ratio HTML / JSON, and the time from the question to the first status line
(the model's 0.3 s to its first byte included), measured the same way for both."""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
import time
from pathlib import Path

from common import (
    conversations,
    cpu_seconds,
    fake_llm,
    glassbox,
    machine,
    peak_memory_mib,
    percentile,
    profiled,
    report,
    turn_over_socket,
)

SESSIONS = int(os.environ.get("BENCH_SESSIONS", "100"))
ARRIVAL = 2.0
QUESTION = "How do I negotiate my salary?"


async def html_turn(server, conversation: str, cookies: str) -> tuple[int, int, int]:
    """(question sent, first status line read, frames) of one turn over an HTML socket."""
    import websockets

    url = server.url.replace("http", "ws") + f"/ws/c/{conversation}/"
    async with websockets.connect(
        url, additional_headers={"Cookie": cookies, "Origin": server.url}, max_size=None
    ) as socket:
        asked = time.monotonic_ns()
        await socket.send(json.dumps({"message": QUESTION}))
        first, frames = 0, 0
        while True:
            frame = await socket.recv()
            frames += 1
            if not first and "Searching the knowledge base" in frame:
                first = time.monotonic_ns()
            if 'class="message assistant state-' in frame and "state-streaming" not in frame:
                if "state-complete" not in frame:
                    raise RuntimeError("the turn did not complete")
                return asked, first, frames


async def json_turn(server, conversation: str, cookies: str) -> tuple[int, int, int]:
    asked = time.monotonic_ns()
    events = await turn_over_socket(server, conversation, cookies, QUESTION)
    first = next(t for t, e in events if e["type"] == "status")
    if events[-1][1].get("state") != "complete":
        raise RuntimeError("the turn did not complete")
    return asked, first, len(events)


def phase(title: str, work: Path, llm: str, turn, tag: str) -> tuple[float, list[Path]]:
    work.mkdir()
    with glassbox(work, llm) as server:
        ids, cookies = conversations(server, SESSIONS + 1)
        asyncio.run(turn(server, ids[0], cookies))  # warm up

        async def everyone():
            async def one(conversation: str):
                await asyncio.sleep(random.random() * ARRIVAL)
                return await turn(server, conversation, cookies)

            return await asyncio.gather(*(one(c) for c in ids[1:]), return_exceptions=True)

        pid = server.process.pid
        before = cpu_seconds(pid)
        with profiled([pid], tag) as profiles:
            results = asyncio.run(everyone())
        cpu = cpu_seconds(pid) - before
        peak = peak_memory_mib(pid)
    done = [r for r in results if not isinstance(r, BaseException)]
    # From the question to the first line: the model's 0.3 s, then the server's part.
    waits = [(first - asked) / 1e6 for asked, first, _ in done]
    per_turn = cpu / SESSIONS * 1000
    report(title, [
        ("turns complete", f"{len(done)} / {SESSIONS}"),
        ("frames received", f"{sum(f for *_, f in done):,}"),
        ("question to first status p50 / p99 (ms)",
         f"{percentile(waits, 50):.0f} / {percentile(waits, 99):.0f}"),
        ("server CPU per turn (ms)", f"{per_turn:.1f}"),
        ("peak memory (MiB)", f"{peak:.0f}"),
    ])  # fmt: skip
    return per_turn, profiles


def main() -> None:
    print(f"machine: {machine()}; {SESSIONS} sessions arriving within {ARRIVAL:.0f} s")
    pace = ("--ttft", "0.3", "--tokens", "60", "--rate", "20", "--chunk", "4")
    with tempfile.TemporaryDirectory() as work, fake_llm(*pace) as llm:
        as_json, json_profiles = phase("JSON clients", Path(work) / "json", llm, json_turn, "json")
        as_html, html_profiles = phase("HTML clients (what a browser receives)",
                                       Path(work) / "html", llm, html_turn, "html")  # fmt: skip
    report(
        "Browsers beside programs", [("CPU per turn, HTML / JSON", f"{as_html / as_json:.2f}x")]
    )
    if json_profiles and html_profiles:
        from profile_split import per_turn, print_table

        print_table("Where the CPU goes (the profile's share of each phase's CPU)", {
            "JSON": per_turn(json_profiles[0], as_json),
            "HTML": per_turn(html_profiles[0], as_html),
        })  # fmt: skip


if __name__ == "__main__":
    main()
