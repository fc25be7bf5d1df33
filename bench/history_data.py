"""A history of real size for bench/history_scale.py: one user (`history`) with 10,000
conversations, and other users, 1,000,000 events in all (`--conversations`, `--events`).

The turns are real ones: a few demo turns run through the runner first, and every generated
turn copies one of them (its feed, events, model calls and answer) under new ids and times,
sealed anew (each event's chain, the feed's closing, the ledger), so `verify_audit` checks
it as it checks any turn. Questions and answers carry words drawn from the knowledge base,
so a search matches some conversations and not others. Written with COPY on PostgreSQL
(executemany elsewhere), a few hundred conversations at a time.

    DATABASE_URL=postgres://… .venv/bin/python bench/history_data.py

Run once per database: a database that holds the history already is left as it is."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.db.models import Model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

USER = "history"
OTHER_USERS = 9
# The demo's prompts that answer without asking anyone: one with a tool call, one with two.
PROMPTS = (
    "How do I negotiate my salary?",
    "Compare salary negotiation and interview preparation",
    "Hello there",
)
# Conversations written per transaction.
BATCH = 250


@dataclass
class Template:
    """One real turn, as stored: copied (under new ids and times) for every generated turn."""

    question: str
    answer: str
    feed: dict[str, Any]
    events: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    # When each event and the end came, after the feed's start.
    offsets: list[timedelta] = field(default_factory=list)
    duration: timedelta = timedelta()


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("GLASSBOX_DEMO_DELAY", "0")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ.pop("OPENAI_API_KEY", None)  # the offline demo model runs the templates
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("seed_demo", verbosity=0)


def templates() -> list[Template]:
    """Real demo turns, run once in a conversation of their own, read back."""
    from django.contrib.auth.models import User

    from activity.models import ActivityEvent, ModelCall
    from chat.models import Conversation
    from tests.support.turns import run_turn

    owner, _ = User.objects.get_or_create(username=f"{USER}-templates")
    made = []
    for prompt in PROMPTS:
        answer = run_turn(Conversation.objects.create(owner=owner), prompt)
        assert answer.feed is not None and answer.state == "complete", answer.state
        feed = answer.feed
        values = {f.attname: getattr(feed, f.attname) for f in feed._meta.concrete_fields}
        events: list[dict[str, Any]] = [
            {**row} for row in ActivityEvent.objects.filter(feed=feed).order_by("seq").values()
        ]
        calls: list[dict[str, Any]] = [
            {**row} for row in ModelCall.objects.filter(feed=feed).order_by("round").values()
        ]
        made.append(
            Template(
                question=prompt,
                answer=answer.content,
                feed=values,
                events=events,
                calls=calls,
                offsets=[event["created_at"] - feed.started_at for event in events],
                duration=(feed.finished_at or feed.started_at) - feed.started_at,
            )
        )
    return made


def vocabulary() -> list[str]:
    """The knowledge base's words of five letters or more: what people ask about."""
    from chat.models import Document

    words = {
        word.strip(".,:;!?()\"'").lower()
        for document in Document.objects.all()
        for word in f"{document.title} {document.body}".split()
    }
    return sorted(word for word in words if len(word) >= 5 and word.isalpha())


class Ids:
    """The next primary key of each table: rows are written with their ids, so a feed's
    events and its message can name it before it is stored; the sequences move after."""

    def __init__(self) -> None:
        from django.db.models import Max

        from activity.models import ActivityEvent, ActivityFeed, LedgerEntry, ModelCall
        from chat.models import Message

        self.models: tuple[type[Model], ...] = (
            ActivityEvent, ActivityFeed, LedgerEntry, ModelCall, Message,
        )  # fmt: skip
        self.next: dict[type[Model], int] = {
            m: (m._default_manager.aggregate(top=Max("pk"))["top"] or 0) + 1 for m in self.models
        }

    def take(self, model: type[Model]) -> int:
        value = self.next[model]
        self.next[model] += 1
        return value

    def move_sequences(self) -> None:
        from django.core.management.color import no_style
        from django.db import connection

        with connection.cursor() as cursor:
            for statement in connection.ops.sequence_reset_sql(no_style(), self.models):
                cursor.execute(statement)


def write(model: type[Model], rows: Sequence[Any]) -> None:
    """Rows of one model as they are, ids and times included (no auto_now): COPY on
    PostgreSQL, a plain INSERT elsewhere."""
    from django.db import connection

    if not rows:
        return
    fields = model._meta.concrete_fields
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(f.column or f.name) for f in fields)
    values = (
        [f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields] for row in rows
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for value in values:
                    copy.write_row(value)
        else:
            marks = ", ".join(["%s"] * len(fields))
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(values))


@dataclass
class Batch:
    conversations: list[Any] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    feeds: list[Any] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    calls: list[Any] = field(default_factory=list)
    ledger: list[Any] = field(default_factory=list)


class Generator:
    def __init__(self, made: list[Template], words: list[str], now: datetime, seed: int) -> None:
        from activity.auditing.audit import ledger_head

        self.templates = made
        self.words = words
        self.now = now
        self.random = random.Random(seed)
        self.ids = Ids()
        self.ledger = ledger_head()
        self.event_count = 0

    def phrase(self, count: int) -> str:
        return " ".join(self.random.choice(self.words) for _ in range(count))

    def conversation(self, batch: Batch, owner_id: int, turns: int, days: float) -> None:
        from chat.models import Conversation, Message

        start = self.now - timedelta(days=days)
        conversation = Conversation(
            id=uuid.UUID(int=self.random.getrandbits(128), version=4),
            owner_id=owner_id,
            title="" if self.random.random() < 0.9 else self.phrase(3).capitalize(),
            created_at=start,
            updated_at=start,
        )
        batch.conversations.append(conversation)
        at = start
        for _turn in range(turns):
            template = self.random.choice(self.templates)
            question = f"{template.question} ({self.phrase(4)})"
            answer = f"{template.answer}\n\nSee also: {self.phrase(12)}."
            feed_id = self.turn(batch, template, owner_id, conversation.id, at, answer)
            batch.messages.append(
                Message(
                    id=self.ids.take(Message), conversation_id=conversation.id, role="user",
                    content=question, state="complete", created_at=at, updated_at=at,
                )
            )  # fmt: skip
            ended = at + template.duration
            batch.messages.append(
                Message(
                    id=self.ids.take(Message), conversation_id=conversation.id,
                    role="assistant", content=answer, state="complete", feed_id=feed_id,
                    created_at=at, updated_at=ended,
                )
            )  # fmt: skip
            at = ended + timedelta(seconds=self.random.randint(20, 600))
        conversation.updated_at = at

    def turn(
        self,
        batch: Batch,
        template: Template,
        owner_id: int,
        conversation_id: uuid.UUID,
        at: datetime,
        answer: str,
    ) -> int:
        from activity.models import ActivityEvent, ActivityFeed, LedgerEntry, ModelCall
        from activity.recording.chain import (
            CLOSED_CALL_FIELDS,
            CLOSED_FEED_FIELDS,
            GENESIS,
            closing,
            ledger_entry,
            text_digest,
        )

        feed_id = self.ids.take(ActivityFeed)
        head = GENESIS
        for offset, values in zip(template.offsets, template.events, strict=True):
            event = ActivityEvent(
                **{**values, "id": self.ids.take(ActivityEvent), "feed_id": feed_id,
                   "created_at": at + offset}
            ).seal(head)  # fmt: skip
            head = event.chain
            batch.events.append(event)
        self.event_count += len(template.events)
        calls = [
            ModelCall(**{**values, "id": self.ids.take(ModelCall), "feed_id": feed_id,
                         "created_at": at})
            for values in template.calls
        ]  # fmt: skip
        batch.calls.extend(calls)
        feed = ActivityFeed(
            **{
                **template.feed,
                "id": feed_id,
                "owner_id": owner_id,
                "conversation_id": conversation_id,
                "started_at": at,
                "finished_at": at + template.duration,
                "heartbeat_at": at + template.duration,
                "opened_count": 0,
                "first_opened_at": None,
                "chain_head": head,
                "answer_sha256": text_digest(answer),
            }
        )
        feed.closing = closing(
            {name: getattr(feed, name) for name in CLOSED_FEED_FIELDS},
            [{name: getattr(call, name) for name in CLOSED_CALL_FIELDS} for call in calls],
        )
        batch.feeds.append(feed)
        entry = ledger_entry(self.ledger, feed_id, feed.closing)
        batch.ledger.append(
            LedgerEntry(
                id=self.ids.take(LedgerEntry), feed_id=feed_id, sealed=feed.closing,
                previous=self.ledger, entry=entry, at=at + template.duration,
            )
        )  # fmt: skip
        self.ledger = entry
        return feed_id


def plan(
    conversations: int, events: int, per_turn: float, rng: random.Random
) -> Iterator[tuple[int, int]]:
    """(user index, turns) for each conversation: the user's `conversations` first (1 to 5
    turns each), then the other users' until the events are reached."""
    made = 0.0
    for _ in range(conversations):
        turns = rng.randint(1, 5)
        made += turns * per_turn
        yield 0, turns
    while made < events:
        turns = rng.randint(1, 8)
        made += turns * per_turn
        yield rng.randint(1, OTHER_USERS), turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=float, default=365)
    parser.add_argument("--seed", type=int, default=56)
    arguments = parser.parse_args()
    setup()
    print(generate(arguments.conversations, arguments.events, arguments.days, arguments.seed))


def generate(conversations: int, events: int, days: float, seed: int) -> str:
    """Writes the history unless the database holds it; says what it did."""
    from django.contrib.auth.models import User
    from django.db import transaction
    from django.utils import timezone

    from activity.models import ActivityEvent, ActivityFeed, LedgerEntry, ModelCall
    from chat.models import Conversation, Message

    if User.objects.filter(username=USER).exists():
        return f"{USER} exists: the history is there already"
    started = time.perf_counter()
    made = templates()
    owners = [User.objects.create_user(USER, password=USER).pk]
    owners += [User.objects.create_user(f"{USER}-{n}").pk for n in range(1, OTHER_USERS + 1)]
    rng = random.Random(seed)
    generator = Generator(made, vocabulary(), timezone.now(), seed)
    per_turn = sum(len(t.events) for t in made) / len(made)
    batch, count = Batch(), 0
    order = (Conversation, Message, ActivityFeed, ActivityEvent, ModelCall, LedgerEntry)

    def flush() -> None:
        # Parents first; the conversation's age decides the feeds' and the ledger's order
        # only within a batch, which no reader relies on.
        with transaction.atomic():
            for model, rows in zip(
                order,
                (batch.conversations, batch.messages, batch.feeds, batch.events, batch.calls,
                 batch.ledger),
                strict=True,
            ):  # fmt: skip
                write(model, rows)

    for user, turns in plan(conversations, events, per_turn, rng):
        generator.conversation(batch, owners[user], turns, rng.random() * days)
        count += 1
        if len(batch.conversations) >= BATCH:
            flush()
            batch = Batch()
    flush()
    generator.ids.move_sequences()
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return (
        f"{count:,} conversations ({conversations:,} of {USER}), "
        f"{generator.event_count:,} events, in {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
