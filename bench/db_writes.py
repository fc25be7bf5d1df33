"""Database writes per turn, counted with a query wrapper around every statement. Target:
at most (status + tool events) + model calls (each request's usage and reasoning, one row)
+ ceil(answer characters / 2,000) + 5 (the fifth: the feed's closing in the ledger of all
feeds, at its end) + one text update per group-commit window the turn lasted
(GLASSBOX_COMMIT_SECONDS: what a turn showed is written within one window, and every running
turn's rows go in the same transaction), never one per token."""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

from common import django_with_fresh_database, machine, report

PROMPTS = [
    "Tell me a joke",
    "How do I negotiate my salary?",
    "Compare salary negotiation and interview preparation",
    "What time is it, and how do I prepare for an interview?",
]


def main() -> None:
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as work:
        django_with_fresh_database(Path(work))
        from asgiref.sync import async_to_sync
        from django.conf import settings
        from django.contrib.auth.models import User
        from django.db import connection

        from activity.models import ActivityEvent, ModelCall
        from chat.models import Conversation, Message
        from chat.turns import runner
        from chat.turns.admission import admit

        user = User.objects.get(username="demo")
        rows = []
        for prompt in PROMPTS:
            writes: list[str] = []

            def count(execute, sql, params, many, context, writes=writes):
                if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
                    writes.append(sql)
                return execute(sql, params, many, context)

            conversation = Conversation.objects.create(owner=user)
            with connection.execute_wrapper(count):
                turn = admit(conversation=conversation, text=prompt)
                started = time.monotonic()
                async_to_sync(runner.run)(answer=turn.answer)
                windows = math.ceil(
                    (time.monotonic() - started) / settings.GLASSBOX_COMMIT_SECONDS
                )
            answer = Message.objects.get(pk=turn.answer.pk)
            events = ActivityEvent.objects.filter(feed_id=answer.feed_id).count()
            calls = ModelCall.objects.filter(feed_id=answer.feed_id).count()
            budget = events + calls + math.ceil(len(answer.content) / 2000) + 5 + windows
            tokens = math.ceil(len(answer.content) / 4)
            verdict = "ok" if len(writes) <= budget else "OVER"
            rows.append(
                (
                    f"“{prompt[:40]}”",
                    f"{len(writes)} writes (budget {budget}: {events} events, {calls} model "
                    f"calls, {len(answer.content)} chars, ~{tokens} tokens, {windows} commit "
                    f"windows) {verdict}",
                )
            )
        report("Database writes per turn", rows)


if __name__ == "__main__":
    main()
