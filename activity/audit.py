"""The integrity of the audit record: resealing after the one rewrite allowed (erasure),
checking every chain (`manage.py verify_audit`, the admin), and the evidence export for a
period (`manage.py export_evidence`, the admin), read a chunk of feeds at a time so memory
stays flat however long the period."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from activity.chain import ALL_SEALED, GENESIS, Check, check, link
from activity.models import ActivityEvent, ActivityFeed, ChainReseal, ModelCall

CHUNK = 500
EVENT_COLUMNS = ("id", "chain", *ALL_SEALED)


def reseal(feed_ids: Iterable[int], *, reason: str) -> int:
    """Seals these feeds' events again as they now stand, and records that it did; for the
    erasure, in its transaction. Returns how many feeds were resealed."""
    resealed = 0
    with transaction.atomic():
        for feed in ActivityFeed.objects.filter(pk__in=list(feed_ids)).order_by("pk"):
            rows = list(feed.events.order_by("seq"))
            previous, head = (rows[-1].chain if rows else GENESIS), GENESIS
            for row in rows:
                row.chain = head = link(head, row.sealed_values())
            ActivityEvent.objects.bulk_update(rows, ["chain"], batch_size=500)
            ActivityFeed.objects.filter(pk=feed.pk).update(chain_head=head)
            ChainReseal.objects.create(
                feed=feed, reason=reason[:200], previous_head=previous, head=head
            )
            resealed += 1
    return resealed


@dataclass(frozen=True, slots=True)
class Integrity:
    """One feed's chain as checked: intact, or where and how it breaks."""

    feed_id: int
    check: Check
    # The head the feed recorded at its last boundary; checked once the feed is not running.
    recorded_head: str
    running: bool
    resealed: bool

    @property
    def head_matches(self) -> bool:
        return self.running or self.recorded_head == self.check.head

    @property
    def intact(self) -> bool:
        return self.check.intact and self.head_matches

    def problem(self) -> str:
        if not self.check.intact:
            return f"event seq {self.check.broken_at} does not match its hash"
        if not self.head_matches:
            return "its last events do not reach the head it recorded (removed or added)"
        return ""


def feed_integrity(feed: ActivityFeed) -> Integrity:
    rows = feed.events.order_by("seq").values(*EVENT_COLUMNS)
    return _integrity(feed, check(rows), resealed=feed.reseals.exists())


def _integrity(feed: ActivityFeed, checked: Check, *, resealed: bool) -> Integrity:
    return Integrity(
        feed_id=feed.pk,
        check=checked,
        recorded_head=feed.chain_head,
        running=feed.state == ActivityFeed.State.RUNNING,
        resealed=resealed,
    )


def _chunks(feeds: QuerySet[ActivityFeed]) -> Iterator[list[ActivityFeed]]:
    last = 0
    while chunk := list(feeds.filter(pk__gt=last).order_by("pk")[:CHUNK]):
        last = chunk[-1].pk
        yield chunk


def _events_of(chunk: list[ActivityFeed]) -> dict[int, list[dict[str, Any]]]:
    by_feed: dict[int, list[dict[str, Any]]] = {feed.pk: [] for feed in chunk}
    rows = ActivityEvent.objects.filter(feed_id__in=by_feed).order_by("feed_id", "seq")
    for row in rows.values(*EVENT_COLUMNS):
        by_feed[row["feed_id"]].append(row)
    return by_feed


def verify(feeds: QuerySet[ActivityFeed]) -> Iterator[Integrity]:
    """Every feed's integrity, in id order."""
    for chunk in _chunks(feeds):
        events = _events_of(chunk)
        resealed = set(
            ChainReseal.objects.filter(feed__in=chunk).values_list("feed_id", flat=True)
        )
        for feed in chunk:
            yield _integrity(feed, check(events[feed.pk]), resealed=feed.pk in resealed)


def period(since: datetime | None, until: datetime | None) -> QuerySet[ActivityFeed]:
    """The feeds that began in [since, until)."""
    feeds = ActivityFeed.objects.select_related("owner")
    if since is not None:
        feeds = feeds.filter(started_at__gte=since)
    if until is not None:
        feeds = feeds.filter(started_at__lt=until)
    return feeds


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, default=str) + "\n"


def evidence_lines(
    feeds: QuerySet[ActivityFeed], *, since: datetime | None = None, until: datetime | None = None
) -> Iterator[str]:
    """NDJSON: for each feed, its record, every event with its hash (tool calls, results,
    approvals' decisions, status lines), its model calls, and its chain as checked now; then
    a manifest of the counts, a digest of every chain head, and the SHA-256 of every line
    before it, so a copy kept elsewhere shows whether this file was changed."""
    body = hashlib.sha256()
    heads = hashlib.sha256()
    counts = {"feeds": 0, "events": 0, "tool_calls": 0, "approvals": 0, "model_calls": 0}
    broken: list[int] = []

    def emit(record: dict[str, Any]) -> str:
        line = _line(record)
        body.update(line.encode("utf-8", "surrogatepass"))
        return line

    for chunk in _chunks(feeds):
        events = _events_of(chunk)
        calls: dict[int, list[ModelCall]] = {feed.pk: [] for feed in chunk}
        for call in ModelCall.objects.filter(feed__in=chunk).order_by("feed_id", "round"):
            calls[call.feed_id].append(call)
        resealed = set(
            ChainReseal.objects.filter(feed__in=chunk).values_list("feed_id", flat=True)
        )
        for feed in chunk:
            counts["feeds"] += 1
            yield emit(
                {
                    "record": "feed",
                    "id": feed.pk,
                    "user": feed.owner.get_username(),
                    "conversation": str(feed.conversation_id) if feed.conversation_id else None,
                    "state": feed.state,
                    "started_at": _plain(feed.started_at),
                    "finished_at": _plain(feed.finished_at),
                    "summary": f"{feed.summary_icon} {feed.summary_text}".strip(),
                    "language": feed.language,
                    "model": feed.model,
                    "total_tokens": feed.total_tokens,
                    "cost": None if feed.cost is None else str(feed.cost),
                }
            )
            for row in events[feed.pk]:
                counts["events"] += 1
                counts["tool_calls"] += row["kind"] == ActivityEvent.Kind.TOOL_CALL
                counts["approvals"] += row["kind"] == ActivityEvent.Kind.DECISION
                record = {"record": "event", "feed": row["feed_id"]}
                record |= {k: _plain(v) for k, v in row.items() if k not in ("id", "feed_id")}
                yield emit(record)
            for call in calls[feed.pk]:
                counts["model_calls"] += 1
                yield emit({"record": "model_call", "feed": feed.pk, **call.usage()})
            integrity = _integrity(feed, check(events[feed.pk]), resealed=feed.pk in resealed)
            if not integrity.intact:
                broken.append(feed.pk)
            heads.update(f"{feed.pk}:{integrity.check.head}\n".encode())
            yield emit(
                {
                    "record": "chain",
                    "feed": feed.pk,
                    "events": integrity.check.events,
                    "head": integrity.check.head,
                    "intact": integrity.intact,
                    "problem": integrity.problem(),
                    "resealed_after_erasure": integrity.resealed,
                }
            )
    yield _line(
        {
            "record": "manifest",
            "since": _plain(since),
            "until": _plain(until),
            "generated_at": timezone.now().isoformat(),
            "counts": counts,
            "broken_feeds": broken[:1000],
            "broken_count": len(broken),
            "heads_sha256": heads.hexdigest(),
            "body_sha256": body.hexdigest(),
        }
    )


async def evidence_stream(
    feeds: QuerySet[ActivityFeed], *, since: datetime | None = None, until: datetime | None = None
) -> AsyncIterator[str]:
    """evidence_lines for an async response (Daphne buffers a sync iterator whole): each
    chunk of lines is made in the database thread."""
    lines = evidence_lines(feeds, since=since, until=until)
    done = object()

    def some() -> list[str] | object:
        batch = []
        for line in lines:
            batch.append(line)
            if len(batch) >= 200:
                return batch
        return batch or done

    while (batch := await sync_to_async(some)()) is not done:
        assert isinstance(batch, list)
        for line in batch:
            yield line
