"""Markdown while it streams: CPU per text delta (presenter + rendered frame) for a
500-character answer and a 20,000-character one. Target: the long one within 1.2x of the
short one, because only the unfinished block is parsed again and each block is rendered once."""

from __future__ import annotations

import os
import time

import django

from activity.recording.events import from_json

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django.setup()

from common import machine, report  # noqa: E402

from activity.preferences.feed_prefs import FeedPrefs  # noqa: E402
from activity.presenting.live import LivePresenter  # noqa: E402
from chat.socket.render import live_ops  # noqa: E402

BLOCKS = [
    "**Salary negotiation: preparing your number**\n\n",
    "Before you negotiate, research the market range for the role, the city and your level "
    "of experience; decide on a target, an opening figure and a walk-away point.\n\n",
    "- Anchor on the value you bring\n- Let them name a figure first\n- Ask about the whole "
    "package\n\n",
    "```\ntarget = 52000 * 1.07\n```\n\n",
    "| item | share |\n| --- | --- |\n| base | 80 % |\n| bonus | 20 % |\n\n",
]
DELTA = 4  # characters per chunk, as the demo model streams


def answer(length: int) -> str:
    text = ""
    while len(text) < length:
        text += BLOCKS[len(text) % len(BLOCKS)]
    return text[:length]


def cpu_per_delta(length: int, rounds: int) -> float:
    text = answer(length)
    deltas = [text[i : i + DELTA] for i in range(0, len(text), DELTA)]
    spent, count = 0.0, 0
    for _ in range(rounds):
        presenter = LivePresenter(FeedPrefs(), turn_id=1)
        started = time.process_time()
        for delta in deltas:
            live_ops(1, presenter.on_event(from_json({"type": "text", "content": delta})))
        live_ops(1, presenter.finish())
        spent += time.process_time() - started
        count += len(deltas)
    return spent / count * 1e6


def main() -> None:
    print(f"machine: {machine()}")
    short = cpu_per_delta(500, rounds=80)
    long = cpu_per_delta(20_000, rounds=2)
    report(
        "Markdown while it streams: CPU per text delta (target: 20,000 chars within 1.2x)",
        [
            ("500-character answer (µs per delta)", f"{short:.1f}"),
            ("20,000-character answer (µs per delta)", f"{long:.1f}"),
            ("ratio", f"{long / short:.2f}x"),
        ],
    )


if __name__ == "__main__":
    main()
