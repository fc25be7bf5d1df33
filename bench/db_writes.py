"""Database writes per turn, counted with a query wrapper around every statement. Target:
at most (status + tool events) + model calls (each request's usage and reasoning, one row)
+ ceil(answer characters / 2,000) + 5 (the fifth: the feed's closing in the ledger of all
feeds, at its end), never one per token."""

from __future__ import annotations

import math
import tempfile
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
                async_to_sync(runner.run)(answer=turn.answer)
            answer = Message.objects.get(pk=turn.answer.pk)
            events = ActivityEvent.objects.filter(feed_id=answer.feed_id).count()
            calls = ModelCall.objects.filter(feed_id=answer.feed_id).count()
            budget = events + calls + math.ceil(len(answer.content) / 2000) + 5
            tokens = math.ceil(len(answer.content) / 4)
            verdict = "ok" if len(writes) <= budget else "OVER"
            rows.append(
                (
                    f"“{prompt[:40]}”",
                    f"{len(writes)} writes (budget {budget}: {events} events, {calls} model "
                    f"calls, {len(answer.content)} chars, ~{tokens} tokens) {verdict}",
                )
            )
        report("Database writes per turn", rows)


if __name__ == "__main__":
    main()
