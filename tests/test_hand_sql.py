"""Each statement project.sql keeps, run next to its ORM twin on the same rows: the same
answers, the same rows written (SQLite, and PostgreSQL under DATABASE_URL)."""

from __future__ import annotations

import decimal
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.db.models import Exists
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed, FeedPreferences, ModelCall
from activity.preferences.feed_prefs import SURFACES
from activity.selectors import _RUNNING_AND_RECENT, running_and_recent
from chat.models import Conversation, Message
from chat.socket.reads import _UNCHANGED, _open_answer, _opened, _settings_and_open_answer
from project.sql import insert_row, insert_rows, update_row, update_rows
from tests.support.sessions import session_store

pytestmark = pytest.mark.django_db

CHANGES = {
    "nothing": lambda alice, bob, conversation: None,
    "password": lambda alice, bob, conversation: (
        alice.set_password("another one"),
        alice.save(),
    ),
    "deactivated": lambda alice, bob, conversation: (
        type(alice).objects.filter(pk=alice.pk).update(is_active=False)
    ),
    "logged out": lambda alice, bob, conversation: Session.objects.all().delete(),
    "expired": lambda alice, bob, conversation: Session.objects.update(expire_date=timezone.now()),
    "session data": lambda alice, bob, conversation: Session.objects.update(
        session_data="something else"
    ),
    "conversation deleted": lambda alice, bob, conversation: Conversation.objects.filter(
        pk=conversation.pk
    ).update(deleted_at=timezone.now()),
    "conversation given away": lambda alice, bob, conversation: Conversation.objects.filter(
        pk=conversation.pk
    ).update(owner=bob),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_socket_message_check_finds_the_login_exactly_when_the_orm_does(
    client, alice, bob, alice_conversation, change
):
    client.force_login(alice)
    row = Session.objects.get()
    seen = {"key": row.session_key, "data": row.session_data, "password": alice.password}
    CHANGES[change](alice, bob, alice_conversation)
    now = timezone.now()

    compiled = _UNCHANGED.fetchone(
        conversation=alice_conversation.pk,
        owner=alice.pk,
        password=seen["password"],
        session=seen["key"],
        data=seen["data"],
        now=now,
    )
    sessions = Session.objects.filter(
        session_key=seen["key"], session_data=seen["data"], expire_date__gt=now
    )
    twin = Conversation.objects.filter(
        Exists(sessions),
        pk=alice_conversation.pk,
        owner_id=alice.pk,
        owner__is_active=True,
        owner__password=seen["password"],
    ).exists()
    assert (compiled is not None) == twin == (change == "nothing")


def _answer(conversation: Conversation, state: str) -> Message:
    return Message.objects.create(conversation=conversation, role="assistant", state=state)


@pytest.mark.parametrize(
    "prefs, answers",
    [
        (None, []),
        ({"overrides": {"mode": "block", "max_lines": 3}, "language": "de"}, []),
        ({"overrides": {}, "language": ""}, ["complete", "waiting"]),
        (None, ["streaming"]),
        (None, ["other conversation"]),
    ],
)
def test_a_socket_opening_reads_the_settings_and_open_answer_the_orm_reads(
    client, alice, alice_conversation, prefs, answers
):
    if prefs is not None:
        FeedPreferences.objects.create(user=alice, **prefs)
    for state in answers:
        if state == "other conversation":
            _answer(Conversation.objects.create(owner=alice), "streaming")
        else:
            _answer(alice_conversation, state)

    for surface in SURFACES:
        read = _settings_and_open_answer(alice.pk, alice_conversation.pk, surface)
        assert read[:2] == FeedPreferences.settings_for(alice.pk, surface)
    prefs_read, language, running = _settings_and_open_answer(
        alice.pk, alice_conversation.pk, "page"
    )
    assert (prefs_read.max_lines, language) == ((3, "de") if prefs and language else (6, ""))
    assert running == _open_answer(alice_conversation)
    assert (running is not None) == any(s in Message.OPEN_STATES for s in answers)
    # The opening's one statement, for a login that stands, reads the same.
    client.force_login(alice)
    store = session_store(client.session.session_key)
    for surface in SURFACES:
        opened = _opened(store, alice_conversation.pk, surface)
        assert opened is not None
        assert opened[2] == _settings_and_open_answer(alice.pk, alice_conversation.pk, surface)


def test_a_question_counts_the_running_and_recent_turns_the_orm_counts(
    alice, bob, alice_conversation
):
    def feed(owner, state="complete", hidden=False, age=timedelta()):
        made = ActivityFeed.objects.create(
            owner=owner, conversation_id=alice_conversation.pk, state=state
        )
        ActivityFeed.objects.filter(pk=made.pk).update(
            hidden_from_owner=hidden, started_at=timezone.now() - age
        )

    feed(alice, "running")
    feed(alice, "running", hidden=True)  # a deleted conversation's turn counts no more
    feed(alice, "running", age=timedelta(hours=1))
    feed(alice, age=timedelta(seconds=10))
    feed(alice, age=timedelta(days=2))
    feed(bob, "running")

    since = timezone.now() - timedelta(minutes=1)
    feeds = ActivityFeed.objects.filter(owner=alice, hidden_from_owner=False)
    twin = (
        feeds.filter(state=ActivityFeed.State.RUNNING).count(),
        feeds.filter(started_at__gte=since).count(),
    )
    assert running_and_recent(alice.pk, since) == twin == (2, 2)
    assert running_and_recent(bob.pk, since) == (1, 1)


def _feed(conversation: Conversation) -> ActivityFeed:
    return ActivityFeed.objects.create(
        owner_id=conversation.owner_id, conversation_id=conversation.pk
    )


def _stored(model, feed: ActivityFeed) -> list[dict]:
    return [
        {k: v for k, v in row.items() if k not in ("id", "feed_id")}
        for row in model.objects.filter(feed=feed).order_by("id").values()
    ]


def test_rows_written_by_the_group_commit_are_those_bulk_create_writes(alice_conversation):
    written, created = _feed(alice_conversation), _feed(alice_conversation)
    at = timezone.now()

    def events(feed):
        return [
            ActivityEvent(
                feed=feed, seq=1, kind="tool_call", tool="search", call_id="c1",
                arguments={"query": "salary", "limit": 3, "nested": [1.5, None, "ü"]},
                created_at=at,
            ),
            ActivityEvent(
                feed=feed, seq=2, kind="tool_result", call_id="c1", ok=False,
                result_summary="nothing", duration_ms=212, progress=0.5, created_at=at,
            ),
        ]  # fmt: skip

    def calls(feed):
        return [
            ModelCall(
                feed=feed, round=1, model="demo", duration_ms=40,
                cost=decimal.Decimal("0.000123"), prompt_tokens=None, created_at=at,
            )
        ]  # fmt: skip

    insert_rows(events(written))
    insert_rows(calls(written))
    ActivityEvent.objects.bulk_create(events(created))
    ModelCall.objects.bulk_create(calls(created))
    assert _stored(ActivityEvent, written) == _stored(ActivityEvent, created)
    assert _stored(ModelCall, written) == _stored(ModelCall, created)
    assert len(_stored(ActivityEvent, written)) == 2


def test_a_questions_rows_are_those_create_writes_with_their_new_keys(alice_conversation):
    """insert_row, as a question's rows are written, next to `create()`."""
    elsewhere = Conversation.objects.create(owner_id=alice_conversation.owner_id)

    def rows(conversation, write):
        feed = write(
            ActivityFeed,
            owner_id=conversation.owner_id,
            conversation_id=conversation.pk,
            language="it",
        )
        question = write(Message, conversation=conversation, role="user", content="Ciao? ü")
        answer = write(
            Message, conversation=conversation, role="assistant", state="streaming", feed=feed
        )
        return feed, question, answer

    def inserted(model, **fields):
        row = model(**fields)
        insert_row(row)
        return row

    mine = rows(alice_conversation, inserted)
    twins = rows(elsewhere, lambda model, **fields: model.objects.create(**fields))
    for row, twin in zip(mine, twins, strict=True):
        assert row.pk is not None and not row._state.adding
        stored = type(row).objects.filter(pk=row.pk).values().get()
        stored_twin = type(twin).objects.filter(pk=twin.pk).values().get()
        assert stored == {**stored_twin, **_own(stored)}
        # The instance holds what was stored, as create() leaves it.
        assert {name: getattr(row, name) for name in stored} == stored
    assert mine[2].feed_id == mine[0].pk and mine[1].pk < mine[2].pk


def _own(stored: dict) -> dict:
    """What differs between a row and its twin by design: its key, its conversation, its
    feed and its times."""
    names = ("id", "conversation_id", "feed_id", "created_at", "updated_at", "started_at")
    return {name: value for name, value in stored.items() if name in names}


def _fields(message: Message) -> tuple:
    message.refresh_from_db()
    return message.content, message.state


@pytest.mark.parametrize("opened", [Message.State.STREAMING, Message.State.WAITING])
def test_an_answer_ends_only_from_the_state_it_was_in_as_update_ends_it(
    alice_conversation, opened
):
    """update_row's condition, as the runner ends an answer only if it is still streaming."""
    # One open answer per conversation: the twin's in a conversation of its own.
    elsewhere = Conversation.objects.create(owner_id=alice_conversation.owner_id)
    mine, twin = _answer(alice_conversation, "streaming"), _answer(elsewhere, "streaming")
    values = {"content": "The answer.", "state": Message.State.COMPLETE}
    changed = update_row(Message, mine.pk, values, state=opened)
    twin_changed = Message.objects.filter(pk=twin.pk, state=opened).update(**values)
    assert changed == twin_changed == (opened == Message.State.STREAMING)
    assert _fields(mine) == _fields(twin)


def test_feeds_updated_together_are_those_bulk_update_writes(alice_conversation):
    mine = [_feed(alice_conversation) for _ in range(3)]
    twins = [_feed(alice_conversation) for _ in range(3)]
    beat = timezone.now()
    values = [
        {"event_count": n, "chain_head": f"{n:064x}", "heartbeat_at": beat, "total_tokens": None}
        for n in (1, 7, 0)
    ]
    update_rows(ActivityFeed, [(feed.pk, v) for feed, v in zip(mine, values, strict=True)])
    for feed, v in zip(twins, values, strict=True):
        for name, value in v.items():
            setattr(feed, name, value)
    ActivityFeed.objects.bulk_update(twins, list(values[0]))

    def read(feeds):
        return list(
            ActivityFeed.objects.filter(pk__in=[f.pk for f in feeds])
            .order_by("id")
            .values_list(*values[0])
        )

    assert read(mine) == read(twins)
    assert [row[0] for row in read(mine)] == [1, 7, 0]


def test_a_compiled_statement_missing_a_value_names_it_and_runs_nothing(alice):
    with (
        CaptureQueriesContext(connection) as statements,
        pytest.raises(TypeError, match="no value for the statement's Param 'since'"),
    ):
        _RUNNING_AND_RECENT.fetchone(owner=alice.pk)
    assert len(statements) == 0


# A statement's text in a string: a keyword starting it, or a clause of one.
STATEMENT_TEXT = re.compile(
    r"""[fr]?["']\s*(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE)\s"""
    r"|SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s"
    r"|\bRawSQL\(|\.raw\(|\.extra\("
)


def test_no_module_but_project_sql_spells_a_statement():
    """SQL outside project.sql would escape the twin tests above."""
    root = Path(__file__).resolve().parent.parent
    spelled = [
        f"{path.relative_to(root)}:{number}"
        for app in ("activity", "chat", "project")
        for path in sorted((root / app).rglob("*.py"))
        if path != root / "project" / "sql.py"
        # A migration's DDL runs once, on PostgreSQL only: it has no twin to escape.
        and "migrations" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if STATEMENT_TEXT.search(line)
    ]
    assert spelled == []
