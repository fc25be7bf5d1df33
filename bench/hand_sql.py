"""What each statement kept in project.sql costs the database thread, next to its ORM twin
building the same statement on every call: the socket's check of every message it receives
(Permit), the reading of a socket as it opens, and a question's two counts of turns.

    .venv/bin/python bench/hand_sql.py

A statement stays in project.sql only while it is much cheaper than its twin here."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import django_with_fresh_database, machine, report

CALLS = 2_000


def per_call_us(run: Callable[[], object]) -> float:
    """CPU time of one call (this process's, so other work on the machine counts less), the
    best of three rounds."""
    for _ in range(50):
        run()
    rounds = []
    for _ in range(3):
        started = time.process_time()
        for _ in range(CALLS):
            run()
        rounds.append((time.process_time() - started) / CALLS * 1_000_000)
    return min(rounds)


def main() -> None:
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as work:
        django_with_fresh_database(Path(work))
        from datetime import timedelta

        from django.contrib.auth.models import User
        from django.contrib.sessions.models import Session
        from django.db.models import Exists
        from django.test import Client
        from django.utils import timezone

        from activity.models import ActivityFeed, FeedPreferences
        from chat.models import Conversation, Message
        from chat.socket.reads import Permit, _settings_and_open_answer
        from chat.turns.admission import _counts

        user = User.objects.get(username="demo")
        Client().force_login(user)
        session = Session.objects.get()
        conversation = Conversation.objects.create(owner=user)
        permit = Permit(
            session.session_key, user.pk, conversation.pk, (session.session_data, user.password)
        )

        def permit_twin() -> bool:
            sessions = Session.objects.filter(
                session_key=session.session_key,
                session_data=session.session_data,
                expire_date__gt=timezone.now(),
            )
            return (
                Conversation.objects.filter(
                    pk=conversation.pk,
                    owner_id=user.pk,
                    owner__is_active=True,
                    owner__password=user.password,
                )
                .filter(Exists(sessions))
                .exists()
            )

        def opening_twin() -> object:
            return FeedPreferences.settings_for(user.pk), (
                Message.objects.filter(conversation=conversation, state__in=Message.OPEN_STATES)
                .values_list("pk", flat=True)
                .first()
            )

        def counts_twin() -> tuple[int, int]:
            feeds = ActivityFeed.objects.filter(owner_id=user.pk, hidden_from_owner=False)
            return (
                feeds.filter(state=ActivityFeed.State.RUNNING).count(),
                feeds.filter(started_at__gte=timezone.now() - timedelta(minutes=1)).count(),
            )

        rows = []
        for name, hand, twin in (
            ("a socket message's check (Permit)", permit.check, permit_twin),
            (
                "a socket's opening read",
                lambda: _settings_and_open_answer(user.pk, conversation.pk, "page"),
                opening_twin,
            ),
            ("a question's two counts", lambda: _counts(user.pk), counts_twin),
        ):
            kept, built = per_call_us(hand), per_call_us(twin)
            rows.append((name, f"{kept:.0f} µs, the ORM {built:.0f} µs ({built / kept:.1f}×)"))
        report("One call of each statement (SQLite)", rows)


if __name__ == "__main__":
    main()
