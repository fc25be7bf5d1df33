"""What the tamper-evident chain costs: CPU to seal one event (done in the turn's process,
before the batch is written) and per demo turn, to close a feed at its end, and how fast
verify_audit checks a stored history (chains, closings, the records chat keeps, the ledger).
The event hashes go in the same INSERT; a turn's end adds its ledger entry (bench/db_writes.py
counts the statements)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import django_with_fresh_database, machine, report

PROMPTS = ["How do I negotiate my salary?", "Compare salary negotiation and interview preparation"]
TURNS = 40


def main() -> None:
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as work:
        django_with_fresh_database(Path(work))
        from django.contrib.auth.models import User

        from activity.auditing.audit import ledger_problems, period, verify
        from activity.models import ActivityEvent, ActivityFeed, ModelCall
        from activity.recording.chain import (
            CLOSED_CALL_FIELDS,
            CLOSED_FEED_FIELDS,
            GENESIS,
            closing,
        )
        from chat.models import Conversation
        from tests.support.turns import run_turn

        user = User.objects.create_user("bench")
        for n in range(TURNS):
            run_turn(Conversation.objects.create(owner=user), PROMPTS[n % len(PROMPTS)])
        rows = list(ActivityEvent.objects.order_by("feed_id", "seq"))
        per_turn = len(rows) / TURNS

        rounds = 20
        started = time.process_time()
        for _ in range(rounds):
            head = GENESIS
            for row in rows:
                head = row.seal(head).chain
        seal_us = (time.process_time() - started) / (rounds * len(rows)) * 1e6

        feeds = list(ActivityFeed.objects.values(*CLOSED_FEED_FIELDS))
        calls = list(ModelCall.objects.values("feed_id", *CLOSED_CALL_FIELDS))
        started = time.process_time()
        for _ in range(rounds):
            for feed in feeds:
                closing(feed, [call for call in calls if call["feed_id"] == feed["id"]])
        close_us = (time.process_time() - started) / (rounds * len(feeds)) * 1e6

        started = time.perf_counter()
        checked = sum(integrity.check.events for integrity in verify(period(None, None)))
        problems = list(ledger_problems())
        verify_s = time.perf_counter() - started
        assert not problems, problems
        report(
            "The audit chain",
            [
                ("events per demo turn", f"{per_turn:.1f}"),
                ("CPU to seal one event", f"{seal_us:.1f} µs"),
                ("CPU to seal a turn's events", f"{seal_us * per_turn / 1000:.3f} ms"),
                ("CPU to close a turn's feed", f"{close_us:.1f} µs"),
                ("verify_audit, events checked per second", f"{checked / verify_s:,.0f}"),
            ],
        )


if __name__ == "__main__":
    main()
