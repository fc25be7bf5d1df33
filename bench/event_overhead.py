"""Per-event overhead: the same stream of text deltas through Glassbox (recorded, coalesced,
presented) and through a bare Channels consumer that only forwards them, on the same Daphne to
the same client. Figure: server CPU time per delta, and the ratio Glassbox / bare (target
<= 1.5)."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import websockets
from common import (
    conversations,
    cpu_seconds,
    fake_llm,
    glassbox,
    machine,
    report,
    turn_over_socket,
)

DELTAS = 200
TURNS = 10


async def relay_turn(server, cookies: str) -> int:
    async with websockets.connect(
        server.url.replace("http", "ws") + "/ws/bench/relay/",
        additional_headers={"Cookie": cookies, "Origin": server.url},
    ) as socket:
        await socket.send(json.dumps({"message": "Tell me a story"}))
        frames = 0
        while json.loads(await socket.recv())["type"] != "done":
            frames += 1
        return frames


def main() -> None:
    print(f"machine: {machine()}")
    with (
        tempfile.TemporaryDirectory() as work,
        fake_llm("--direct", "--ttft", "0", "--tokens", str(DELTAS), "--rate", "0") as llm,
        # The bare relay has no way back from a dropped frame: give it room for every delta.
        glassbox(
            Path(work), llm, asgi="bench.asgi:application", GLASSBOX_CHANNEL_CAPACITY="100000"
        ) as server,
    ):
        ids, cookies = conversations(server, TURNS)
        pid = server.process.pid
        results: dict[str, list[float]] = {}
        for _ in range(2):  # side by side, twice, so drift shows
            for name in ("bare relay", "Glassbox"):
                before = cpu_seconds(pid)
                for n in range(TURNS):
                    if name == "Glassbox":
                        asyncio.run(turn_over_socket(server, ids[n], cookies, "Tell me"))
                    else:
                        asyncio.run(relay_turn(server, cookies))
                used = cpu_seconds(pid) - before
                results.setdefault(name, []).append(used / (TURNS * DELTAS) * 1e6)
        bare, ours = min(results["bare relay"]), min(results["Glassbox"])
        report(
            f"Per-event overhead ({TURNS} turns x {DELTAS} deltas, best of 2)",
            [
                ("bare relay: server CPU per delta (us)", f"{bare:.1f}"),
                ("Glassbox: server CPU per delta (us)", f"{ours:.1f}"),
                ("ratio Glassbox / bare (target <= 1.5)", f"{ours / bare:.2f}"),
            ],
        )


if __name__ == "__main__":
    main()
