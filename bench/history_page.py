"""The conversation page with 10, 100 and 500 turns: its query count must not grow with the
number of turns; render time per turn shown. The page opens at the latest 20 turns, so the
whole conversation (`?from=` its first message) is measured too."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from common import django_with_fresh_database, machine, report


def main() -> None:
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as work:
        django_with_fresh_database(Path(work))
        from django.contrib.auth.models import User
        from django.db import connection
        from django.test import Client

        from activity.models import ActivityEvent, ActivityFeed
        from chat.models import Conversation, Message

        user = User.objects.get(username="demo")
        client = Client()
        client.force_login(user)
        rows = []
        for turns in (10, 100, 500):
            conversation = Conversation.objects.create(owner=user, title=f"{turns} turns")
            for n in range(turns):
                Message.objects.create(conversation=conversation, role="user", content=f"q {n}")
                feed = ActivityFeed.objects.create(
                    owner=user, conversation_id=conversation.pk, state="complete",
                    summary_icon="📄", summary_text="Searched the knowledge base",
                )  # fmt: skip
                ActivityEvent.objects.bulk_create(
                    ActivityEvent(feed=feed, seq=s, kind="status", icon="🔍",
                                  message=f"step {s}", state="done")
                    for s in range(1, 6)
                )  # fmt: skip
                answer = f"**Answer** {n}\n\n- a\n- b"
                Message.objects.create(
                    conversation=conversation, role="assistant", content=answer, feed=feed
                )
            first = conversation.messages.order_by("id")[0].pk
            for label, url, shown in (
                ("opening page", conversation.get_absolute_url(), min(turns, 20)),
                ("whole conversation", f"{conversation.get_absolute_url()}?from={first}", turns),
            ):
                queries: list[str] = []

                def count(execute, sql, params, many, context, queries=queries):
                    queries.append(sql)
                    return execute(sql, params, many, context)

                with connection.execute_wrapper(count):
                    assert client.get(url).status_code == 200
                timings = []
                for _ in range(5):
                    started = time.perf_counter()
                    client.get(url)
                    timings.append(time.perf_counter() - started)
                median = statistics.median(timings)
                rows.append(
                    (
                        f"{turns} turns, {label}",
                        f"{len(queries)} queries, {median * 1000:.0f} ms, "
                        f"{median * 1000 / shown:.2f} ms per shown turn",
                    )
                )
        report("History page (query count must not grow with turns)", rows)


if __name__ == "__main__":
    main()
