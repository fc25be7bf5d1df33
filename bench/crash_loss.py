"""What a hard crash loses of what the user saw: a real server runs turns (two at a time, the
demo model with its tool call and its paced text), is killed with SIGKILL at a random moment,
and restarted; what each follower had received (and when) is compared with the answer the
restart recovered. Target: nothing received more than 250 ms before the kill is lost.

    python bench/crash_loss.py [kills, default 50]

BENCH_HEARTBEAT sets GLASSBOX_HEARTBEAT_SECONDS (0.25 by default, so a dead turn is
recovered within a second; the group commit's window does not depend on it).

Each kill's loss is the age, at the kill, of the oldest thing a follower had that the
recovered answer lacks (a status line, or the first character of the text it lacks)."""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from common import machine, percentile, report

from tests.support.servers import api, demo_token, serve, start_daphne

QUESTION = "How do I negotiate my salary?"
TURNS_AT_ONCE = 2
HEARTBEAT = float(os.environ.get("BENCH_HEARTBEAT", "0.25"))
SETTINGS = {
    "GLASSBOX_DEMO_DELAY": "0.03",  # the demo's human-watchable pace
    "GLASSBOX_HEARTBEAT_SECONDS": str(HEARTBEAT),  # a dead turn is recovered after 4 beats
    "GLASSBOX_TURNS_PER_MINUTE": "100000",
    "GLASSBOX_MAX_CONCURRENT_TURNS": "100000",
    "LOG_LEVEL": "ERROR",
}


class Follower(threading.Thread):
    """Asks over SSE and keeps every event with the moment it arrived."""

    def __init__(self, server, token: str, conversation: str) -> None:
        super().__init__(daemon=True)
        self.server, self.token, self.conversation = server, token, conversation
        self.received: list[tuple[float, dict]] = []

    def run(self) -> None:
        path = f"/api/conversations/{self.conversation}/messages/"
        try:
            stream = api(self.server, self.token, path, {"content": QUESTION},
                         accept="text/event-stream")  # fmt: skip
            for raw in stream:
                if raw.startswith(b"data: "):
                    self.received.append((time.monotonic(), json.loads(raw[6:])))
        except OSError:
            pass  # the server died under us, as intended


@dataclass
class Loss:
    age_ms: float = 0.0  # of the oldest thing lost; 0 when nothing was
    lines: int = 0
    chars: int = 0
    shown_lines: int = 0
    shown_chars: int = 0
    not_a_prefix: bool = False


def compare(received: list[tuple[float, dict]], answer: dict, killed: float) -> Loss:
    kept_seqs = {e["seq"] for e in answer["feed"]["events"]}
    kept_text = answer["content"]
    loss = Loss()
    ages = []
    for arrived, event in received:
        if event["type"] == "status" and "seq" in event:
            loss.shown_lines += 1
            if event["seq"] not in kept_seqs:
                loss.lines += 1
                ages.append(killed - arrived)
    text = ""
    for arrived, event in received:
        if event["type"] != "text":
            continue
        if len(text) + len(event["content"]) > len(kept_text) >= len(text):
            ages.append(killed - arrived)  # the first piece of text it lacks
        text += event["content"]
    loss.shown_chars = len(text)
    loss.chars = max(0, len(text) - len(kept_text))
    loss.not_a_prefix = not text.startswith(kept_text) and not kept_text.startswith(text)
    loss.age_ms = max(ages, default=0.0) * 1000
    return loss


def new_conversation(server, token: str) -> str:
    return json.load(api(server, token, "/api/conversations/", {"title": "crash"}))["id"]


def main() -> None:
    kills = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print(f"machine: {machine()}")
    rng = random.Random(37)
    losses: list[Loss] = []
    # Every option of serve named, so that the settings can only be settings.
    with (
        tempfile.TemporaryDirectory() as work,
        serve(
            Path(work), (), None, mcp_opened=True, seeded=False, terminal=False, **SETTINGS
        ) as first,
    ):
        token = demo_token(first.env)
        server = first
        # One turn to its end: how long a turn lasts, so kills fall anywhere within one.
        warm = Follower(server, token, new_conversation(server, token))
        warm.start()
        warm.join(timeout=60)
        duration = warm.received[-1][0] - warm.received[0][0] + 0.3
        print(f"a turn lasts {duration:.2f} s; {kills} kills, {TURNS_AT_ONCE} turns each")
        for kill in range(kills):
            followers = [
                Follower(server, token, new_conversation(server, token))
                for _ in range(TURNS_AT_ONCE)
            ]
            for follower in followers:
                follower.start()
            time.sleep(rng.uniform(0.05, duration))
            killed = time.monotonic()
            server.process.kill()
            server.process.wait(timeout=10)
            server.log.close()
            for follower in followers:
                follower.join(timeout=10)
            time.sleep(4 * HEARTBEAT + 0.1)  # four missed heartbeats: the turns are dead
            server = start_daphne(first.env)
            for follower in followers:
                data = json.load(
                    api(server, token, f"/api/conversations/{follower.conversation}/")
                )
                if len(data["messages"]) < 2:
                    continue  # killed before the question was stored: nothing was shown
                losses.append(compare(follower.received, data["messages"][1], killed))
            worst = max(losses[-TURNS_AT_ONCE:], key=lambda loss: loss.age_ms, default=Loss())
            print(f"kill {kill + 1}: worst {worst.age_ms:.0f} ms, {worst.lines} lines, "
                  f"{worst.chars} chars lost", flush=True)  # fmt: skip
        server.stop()

    ages = [loss.age_ms for loss in losses]
    lossy = [loss for loss in losses if loss.lines or loss.chars]
    report(
        f"What a SIGKILL loses of what followers saw ({kills} kills, {len(losses)} turns)",
        [
            ("worst loss (age of the oldest thing lost)", f"{max(ages):.0f} ms"),
            (
                "p50 / p99 of a turn's loss",
                f"{percentile(ages, 50):.0f} / {percentile(ages, 99):.0f} ms",
            ),
            ("turns that lost anything", f"{len(lossy)} of {len(losses)}"),
            ("most status lines lost by a turn", str(max(loss.lines for loss in losses))),
            ("most characters lost by a turn", str(max(loss.chars for loss in losses))),
            (
                "lines / characters a turn had shown (mean)",
                f"{sum(loss.shown_lines for loss in losses) / len(losses):.1f} / "
                f"{sum(loss.shown_chars for loss in losses) / len(losses):.0f}",
            ),
            (
                "recovered text not a prefix of what was shown",
                str(sum(loss.not_a_prefix for loss in losses)),
            ),
        ],
    )


if __name__ == "__main__":
    main()
