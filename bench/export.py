"""Export of 100,000 events as NDJSON through the streaming generator: events per second and
peak memory, which must not grow with the number of events (compared with 10,000)."""

from __future__ import annotations

import asyncio
import tempfile
import time
import tracemalloc
from pathlib import Path

from common import django_with_fresh_database, machine, report

EVENTS_PER_FEED = 10


def main() -> None:
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as work:
        django_with_fresh_database(Path(work))
        from django.contrib.auth.models import User
        from django.db.models import F

        from activity.auditing.export import export_stream
        from activity.models import ActivityEvent, ActivityFeed

        user = User.objects.get(username="demo")
        rows = []
        made = 0
        for total in (10_000, 100_000):
            feeds = ActivityFeed.objects.bulk_create(
                ActivityFeed(owner=user, state="complete") for _ in range((total - made) // 10)
            )
            ActivityEvent.objects.bulk_create(
                (
                    ActivityEvent(feed=feed, seq=seq, kind="status", icon="🔍",
                                  message=f"Searching step {seq}", state="done", tool="search")
                    for feed in feeds
                    for seq in range(1, EVENTS_PER_FEED + 1)
                ),
                batch_size=5000,
            )  # fmt: skip
            made = total
            queryset = ActivityFeed.objects.annotate(
                username=F("owner__username"), message_id=F("message__id")
            )

            async def consume(queryset=queryset) -> int:
                size = 0
                async for part in export_stream(queryset, "ndjson"):
                    size += len(part)
                return size

            tracemalloc.start()
            started = time.perf_counter()
            size = asyncio.run(consume())
            elapsed = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            rows.append(
                (
                    f"{total:,} events",
                    f"{total / elapsed:,.0f} events/s, peak {peak / 2**20:.1f} MiB traced, "
                    f"{size / 2**20:.1f} MiB written",
                )
            )
        report("NDJSON export (memory must not grow with events)", rows)


if __name__ == "__main__":
    main()
