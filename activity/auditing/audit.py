"""The integrity of the audit record: resealing after the one rewrite allowed (erasure),
checking every chain (`manage.py verify_audit`, the admin), and the evidence export for a
period (`manage.py export_evidence`, the admin), read a chunk of feeds at a time so memory
stays flat however long the period."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, assert_never

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed, ChainReseal, LedgerEntry, ModelCall
from activity.recording.chain import (
    ALL_SEALED,
    CLOSED_CALL_FIELDS,
    CLOSED_FEED_FIELDS,
    GENESIS,
    SEAL_CURRENT,
    Check,
    check,
    closing,
    ledger_entry,
    link,
    text_digest,
)
from activity.recording.events import (
    AppNote,
    AppView,
    Decision,
    Plan,
    RecordedEvent,
    Score,
    Status,
    ToolCall,
    ToolLog,
    ToolResult,
)
from activity.recording.receipts import receipt_check

CHUNK = 500
EVENT_COLUMNS = ("id", "chain", *ALL_SEALED)

# What the application checks beside the chain for records that live outside activity (the
# answer's text, the approvals' rows): each takes a chunk of feeds with their events and
# returns a problem for each feed that fails. Chat registers its own when it starts.
RecordCheck = Callable[
    [Sequence[ActivityFeed], Mapping[int, list[dict[str, Any]]]], Mapping[int, str]
]
RECORD_CHECKS: list[RecordCheck] = []


def register_record_check(record_check: RecordCheck) -> None:
    if record_check not in RECORD_CHECKS:
        RECORD_CHECKS.append(record_check)


def reseal(feed_ids: Iterable[int], *, reason: str, answer_text: str | None = None) -> int:
    """Seals these feeds' events again as they now stand, and their closing if they had one
    (with `answer_text` as their answer's text if given), and records that it did; for the
    erasure, in its transaction, after its other changes to the feeds. Returns how many feeds
    were resealed."""
    answer_sha256 = None if answer_text is None else text_digest(answer_text)
    resealed = 0
    with transaction.atomic():
        for feed in ActivityFeed.objects.filter(pk__in=list(feed_ids)).order_by("pk"):
            rows = list(feed.events.order_by("seq"))
            previous, head = (rows[-1].chain if rows else GENESIS), GENESIS
            for row in rows:
                # The current seal: a row sealed with the old one is sealed anew with this.
                row.seal_version = SEAL_CURRENT
                row.chain = head = link(head, row.sealed_values())
            ActivityEvent.objects.bulk_update(rows, ["chain", "seal_version"], batch_size=500)
            ActivityFeed.objects.filter(pk=feed.pk).update(chain_head=head)
            if feed.closing:
                ActivityFeed.seal_end(feed.pk, answer_sha256=answer_sha256)
            ChainReseal.objects.create(
                feed=feed, reason=reason[:200], previous_head=previous, head=head
            )
            resealed += 1
    return resealed


def purge(feed_ids: Sequence[int]) -> None:
    """Removes these feeds and everything they hold for good (the retention period is over),
    and says so in the ledger, in the caller's transaction: a feed the ledger knows that is
    gone without this is reported."""
    LedgerEntry.append([(feed_id, LedgerEntry.PURGED) for feed_id in sorted(feed_ids)])
    ActivityEvent.objects.filter(feed_id__in=feed_ids).delete()
    ActivityFeed.objects.filter(pk__in=feed_ids).delete()


# The fields of a feed's evidence record and of a model call's that a verified closing
# covers (the user by id: a name can change; a call's cost and time are not sealed).
SEALED_FEED_RECORD = (
    "user_id", "conversation", "state", "started_at", "finished_at", "summary", "language",
    "model", "total_tokens", "cost", "event_count", "answer_sha256",
)  # fmt: skip
SEALED_CALL_RECORD = CLOSED_CALL_FIELDS


@dataclass(frozen=True, slots=True)
class Integrity:
    """One feed as checked: intact, or where and how it breaks."""

    feed_id: int
    check: Check
    # The head the feed recorded at its last boundary (a pause, a decision, its end).
    recorded_head: str
    # Running now (not paused, not ended): it may have written events since that boundary.
    running: bool
    resealed: bool
    # What is wrong outside the events: its closing, the ledger, the records chat keeps.
    record_problem: str = ""
    # Its row, model calls and answer text are covered by a closing that verifies.
    sealed: bool = False

    @property
    def head_matches(self) -> bool:
        # A running feed may have written events since its last boundary: its recorded head
        # is one of its chain's hashes (and the events after it chain from it, as every link
        # is checked). A paused or ended one's is its last.
        if self.running:
            return self.recorded_head in self.check.hashes
        return self.recorded_head == self.check.head

    @property
    def intact(self) -> bool:
        return self.check.intact and self.head_matches and not self.record_problem

    def problem(self) -> str:
        if not self.check.intact:
            return f"event seq {self.check.broken_at} does not match its hash"
        if not self.head_matches:
            return "its last events do not reach the head it recorded (removed or added)"
        return self.record_problem


def _with_ledger(feeds: QuerySet[ActivityFeed]) -> QuerySet[ActivityFeed]:
    """The feeds, each with the last closing the ledger holds for it (`ledgered`), read in
    the same statement so a feed that ends meanwhile is seen whole or not at all."""
    last = LedgerEntry.objects.filter(feed_id=OuterRef("pk")).order_by("-id")
    return feeds.annotate(ledgered=Subquery(last.values("sealed")[:1]))


def _closing_problem(feed: ActivityFeed, checked: Check, calls: Sequence[ModelCall]) -> str:
    ledgered = getattr(feed, "ledgered", None)
    if feed.state not in ActivityFeed.ENDED:
        if ledgered is not None:
            return "the ledger says it ended, yet it reads as still open (reopened)"
        return ""
    if not feed.closing:
        if ledgered is not None:
            return "the ledger holds a closing for it, yet it has none (removed)"
        return ""
    values = {name: getattr(feed, name) for name in CLOSED_FEED_FIELDS}
    sealed_calls = [{name: getattr(call, name) for name in CLOSED_CALL_FIELDS} for call in calls]
    if closing(values, sealed_calls) != feed.closing:
        return (
            "its record (owner, times, state, summary, counts, usage, model calls or text) "
            "does not match its closing"
        )
    if ledgered != feed.closing:
        return "its closing is not the one the ledger holds for it"
    if feed.event_count != checked.events:
        return f"it counts {feed.event_count} events, its chain holds {checked.events}"
    return ""


def _integrity(
    feed: ActivityFeed,
    checked: Check,
    calls: Sequence[ModelCall],
    *,
    resealed: bool,
    elsewhere: str = "",
) -> Integrity:
    problem = _closing_problem(feed, checked, calls)
    return Integrity(
        feed_id=feed.pk,
        check=checked,
        recorded_head=feed.chain_head,
        running=feed.state == ActivityFeed.State.RUNNING,
        resealed=resealed,
        record_problem=problem or elsewhere,
        sealed=bool(feed.closing) and not problem,
    )


def feed_integrity(feed: ActivityFeed) -> Integrity:
    """One feed, read afresh and checked (the admin's page, a second look at a failure)."""
    fresh = _with_ledger(ActivityFeed.objects.filter(pk=feed.pk)).first()
    return _checked_chunk([fresh or feed])[0][feed.pk]


def _checked_chunk(
    chunk: list[ActivityFeed],
) -> tuple[dict[int, Integrity], dict[int, list[dict[str, Any]]], dict[int, list[ModelCall]]]:
    events = _events_of(chunk)
    calls: dict[int, list[ModelCall]] = {feed.pk: [] for feed in chunk}
    for call in ModelCall.objects.filter(feed__in=chunk).order_by("feed_id", "round"):
        calls[call.feed_id].append(call)
    resealed = set(ChainReseal.objects.filter(feed__in=chunk).values_list("feed_id", flat=True))
    elsewhere: dict[int, str] = {}
    for record_check in RECORD_CHECKS:
        for feed_id, problem in record_check(chunk, events).items():
            elsewhere.setdefault(feed_id, problem)
    checked = {
        feed.pk: _integrity(
            feed,
            check(events[feed.pk]),
            calls[feed.pk],
            resealed=feed.pk in resealed,
            elsewhere=elsewhere.get(feed.pk, ""),
        )
        for feed in chunk
    }
    return checked, events, calls


def _chunks(feeds: QuerySet[ActivityFeed]) -> Iterator[list[ActivityFeed]]:
    last = 0
    feeds = _with_ledger(feeds)
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
    """Every feed's integrity, in id order. A feed that fails is read and checked once more
    on its own: a turn that ended (or a line appended) between two reads is not a break."""
    for chunk in _chunks(feeds):
        checked = _checked_chunk(chunk)[0]
        for feed in chunk:
            integrity = checked[feed.pk]
            if not integrity.intact:
                integrity = feed_integrity(feed)
            yield integrity


def ledger_problems(since: datetime | None = None) -> Iterator[str]:
    """What is wrong with the ledger of all feeds (from its entries written since `since`):
    an entry that does not match its hash or does not follow the one before it (entries
    removed), and a feed it holds that is gone without having been purged."""
    entries = LedgerEntry.objects.order_by("id")
    if since is not None:
        entries = entries.filter(at__gte=since)
    previous: str | None = GENESIS if since is None else None
    last, reported = 0, set[int]()
    columns = ("id", "feed_id", "sealed", "previous", "entry")
    while chunk := list(entries.filter(id__gt=last).values(*columns)[:CHUNK]):
        last = chunk[-1]["id"]
        for entry in chunk:
            if entry["entry"] != ledger_entry(
                entry["previous"], entry["feed_id"], entry["sealed"]
            ):
                yield f"ledger entry {entry['id']} does not match its hash"
            elif previous is not None and entry["previous"] != previous:
                yield f"ledger entry {entry['id']} does not follow the one before it (removed)"
            previous = entry["entry"]
        held = {entry["feed_id"] for entry in chunk if entry["sealed"] != LedgerEntry.PURGED}
        gone = held - set(ActivityFeed.objects.filter(pk__in=held).values_list("pk", flat=True))
        purged = LedgerEntry.objects.filter(feed_id__in=gone, sealed=LedgerEntry.PURGED)
        for feed_id in sorted(gone - set(purged.values_list("feed_id", flat=True)) - reported):
            reported.add(feed_id)
            yield f"feed {feed_id} is in the ledger but gone, and was never purged (deleted)"


def ledger_head() -> str:
    """The last entry of the ledger: keep it elsewhere, and a rebuilt ledger shows."""
    return LedgerEntry.objects.order_by("-id").values_list("entry", flat=True).first() or GENESIS


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


def _event(row: dict[str, Any]) -> RecordedEvent | None:
    """A row read for the evidence (its columns as stored), as the event it records; None if
    it was altered past reading (its chain says so): the evidence still carries it."""
    try:
        return ActivityEvent(**row).to_event()
    except (KeyError, ValueError, TypeError):
        return None


def _counted(event: RecordedEvent | None) -> str | None:
    """Which of the manifest's counts, besides `events`, an event adds to."""
    match event:
        case None:
            return None
        case ToolCall():
            return "tool_calls"
        case Decision():
            return "approvals"
        case Status() | ToolResult() | Plan() | ToolLog() | Score() | AppView() | AppNote():
            return None
        case _:
            assert_never(event)


def _receipts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each decision's receipt beside its call as asked, the fingerprint recomputed now from
    the sealed arguments (activity.recording.receipts.receipt_check). The receipt compares
    the stored columns themselves, so it is given the rows."""
    read = [(row, _event(row)) for row in rows]
    asked = {row["call_id"]: row for row, event in read if _counted(event) == "tool_calls"}
    found = []
    for row, event in read:
        if _counted(event) == "approvals":
            receipt = receipt_check(row, asked.get(row["call_id"]))
            if receipt is not None:
                found.append({k: _plain(v) for k, v in receipt.items()})
    return found


def evidence_lines(
    feeds: QuerySet[ActivityFeed],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    selection: str = "",
) -> Iterator[str]:
    """NDJSON: for each feed, its record (saying which of its fields its closing covers),
    every event with its hash (tool calls, results, approvals' decisions, status lines), its
    model calls, and its chain and closing as checked now; then a manifest of the period
    [since, until), the counts, a digest of every chain head and closing, the ledger's last
    entry, and the SHA-256 of every line before it, so a copy kept elsewhere shows whether
    this file was changed. `selection` says how the feeds differ from the period's, if so."""
    body = hashlib.sha256()
    heads = hashlib.sha256()
    counts = {
        "feeds": 0, "events": 0, "tool_calls": 0, "approvals": 0, "receipts": 0,
        "model_calls": 0,
    }  # fmt: skip
    broken: list[int] = []

    def emit(record: dict[str, Any]) -> str:
        line = _line(record)
        body.update(line.encode("utf-8", "surrogatepass"))
        return line

    for chunk in _chunks(feeds):
        checked, events, calls = _checked_chunk(chunk)
        for feed in chunk:
            integrity = checked[feed.pk]
            counts["feeds"] += 1
            yield emit(
                {
                    "record": "feed",
                    "id": feed.pk,
                    "user": feed.owner.get_username(),
                    "user_id": feed.owner_id,
                    "conversation": str(feed.conversation_id) if feed.conversation_id else None,
                    "state": feed.state,
                    "started_at": _plain(feed.started_at),
                    "finished_at": _plain(feed.finished_at),
                    "summary": f"{feed.summary_icon} {feed.summary_text}".strip(),
                    "language": feed.language,
                    "model": feed.model,
                    "total_tokens": feed.total_tokens,
                    "cost": None if feed.cost is None else str(feed.cost),
                    "event_count": feed.event_count,
                    "answer_sha256": feed.answer_sha256,
                    # What of this record its closing covers, checked now: nothing while the
                    # feed runs, when it ended before closings existed, or when it fails.
                    "sealed_by_closing": list(SEALED_FEED_RECORD) if integrity.sealed else [],
                }
            )
            for row in events[feed.pk]:
                counts["events"] += 1
                if counted := _counted(_event(row)):
                    counts[counted] += 1
                record = {"record": "event", "feed": row["feed_id"]}
                record |= {k: _plain(v) for k, v in row.items() if k not in ("id", "feed_id")}
                yield emit(record)
            for receipt in _receipts(events[feed.pk]):
                counts["receipts"] += 1
                yield emit({"record": "receipt", "feed": feed.pk} | receipt)
            for call in calls[feed.pk]:
                counts["model_calls"] += 1
                sealed = list(SEALED_CALL_RECORD) if integrity.sealed else []
                yield emit(
                    {"record": "model_call", "feed": feed.pk, **call.usage()}
                    | {"sealed_by_closing": sealed}
                )
            if not integrity.intact:
                broken.append(feed.pk)
            heads.update(f"{feed.pk}:{integrity.check.head}:{feed.closing}\n".encode())
            yield emit(
                {
                    "record": "chain",
                    "feed": feed.pk,
                    "events": integrity.check.events,
                    "head": integrity.check.head,
                    "closing": feed.closing,
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
            "selection": selection or "every feed begun in the period",
            "generated_at": timezone.now().isoformat(),
            "counts": counts,
            "broken_feeds": broken[:1000],
            "broken_count": len(broken),
            "heads_sha256": heads.hexdigest(),
            "ledger_head": ledger_head(),
            "body_sha256": body.hexdigest(),
        }
    )


async def evidence_stream(
    feeds: QuerySet[ActivityFeed],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    selection: str = "",
) -> AsyncIterator[str]:
    """evidence_lines for an async response (Daphne buffers a sync iterator whole): each
    chunk of lines is made in the database thread."""
    lines = evidence_lines(feeds, since=since, until=until, selection=selection)
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
