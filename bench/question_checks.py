"""What a question's checks cost the database thread as its asker's history grows: the
running turns, the questions of the last minute and the day's tokens. Target: the same at
50,000 messages as at 100 (every process's turns queue behind this one thread)."""

from __future__ import annotations

import tempfile
import time
from datetime import timedelta
from pathlib import Path

from common import django_with_fresh_database, machine, report

HISTORIES = (100, 5_000, 50_000)
PER_CONVERSATION = 50
CHECKS = 200


def main() -> None:
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as work:
        django_with_fresh_database(Path(work), GLASSBOX_DAILY_TOKENS="1000000000")
        from django.contrib.auth.models import User

        from chat.turns.admission import _check_limits

        asker = User.objects.get(username="demo")
        # Someone else's history too: the checks must not read it either.
        other = User.objects.create_user("other", password="other-password")
        rows, grown = [], 0
        for messages in HISTORIES:
            for owner in (asker, other):
                _grow(owner, messages - grown)
            grown = messages
            for _ in range(5):
                _check_limits(asker.pk)
            started = time.perf_counter()
            for _ in range(CHECKS):
                _check_limits(asker.pk)
            ms = (time.perf_counter() - started) / CHECKS * 1000
            rows.append((f"{messages:,} messages in the asker's history", f"{ms:.2f} ms"))
        report("A question's checks (running turns, last minute, today's tokens)", rows)


def _grow(owner, messages: int) -> None:
    """Finished turns of two days ago, in conversations of PER_CONVERSATION messages."""
    from django.utils import timezone

    from activity.models import ActivityFeed
    from chat.models import Conversation, Message

    conversations = Conversation.objects.bulk_create(
        Conversation(owner=owner) for _ in range(messages // PER_CONVERSATION)
    )
    feeds = ActivityFeed.objects.bulk_create(
        ActivityFeed(owner=owner, conversation_id=c.pk, state="complete", total_tokens=100)
        for c in conversations
        for _ in range(PER_CONVERSATION // 2)
    )
    two_days_ago = timezone.now() - timedelta(days=2)
    ActivityFeed.objects.filter(pk__in=[f.pk for f in feeds]).update(started_at=two_days_ago)
    answers = iter(feeds)
    Message.objects.bulk_create(
        Message(conversation=c, role=role, content="x" * 200, state="complete", feed=feed)
        for c in conversations
        for _ in range(PER_CONVERSATION // 2)
        for role, feed in (("user", None), ("assistant", next(answers)))
    )


if __name__ == "__main__":
    main()
