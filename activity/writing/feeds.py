"""The verbs that write a feed: activity owns its tables, and chat writes them only through
these (an import-linter contract in pyproject.toml keeps chat's writers off activity.models).

`append` is the one way an event is added after a feed's head from outside its running turn
(a decision, a recovered turn's last lines, a contact request): it numbers, seals and writes
the events and moves the feed's count and head, the feed's row locked. A running turn's own
recorder (activity.writing.recorder) numbers and seals with `sealed_rows` too, in memory,
and writes through the group commit (activity.writing.commits): it is its feed's single
writer while it runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from activity.auditing.audit import reseal
from activity.models import ActivityEvent, ActivityFeed, FeedPreferences, ModelCall
from activity.recording.chain import text_digest
from activity.recording.events import RecordedEvent, with_seq
from project.sql import insert_row, insert_rows, update_row


@dataclass(frozen=True, slots=True)
class Appended:
    """What `append` wrote: the events with their seqs, and the feed's new head."""

    events: list[RecordedEvent]
    head: str

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq or 0


@dataclass(frozen=True, slots=True)
class Interrupted:
    """How `interrupt` ended a feed: the seq its last line has (or would have had, when the
    record failed its check and nothing was sealed after it)."""

    last_seq: int
    sealed: bool


def sealed_rows(
    feed: ActivityFeed, events: Sequence[RecordedEvent], first: int, after: str
) -> list[ActivityEvent]:
    """The rows of `events`, numbered from `first` and each sealed after the one before it,
    the first after the hash `after`."""
    rows = []
    for seq, event in enumerate(events, start=first):
        row = ActivityEvent.from_event(feed, with_seq(event, seq)).seal(after)
        after = row.chain
        rows.append(row)
    return rows


def open_feed(*, owner_id: int, conversation_id: uuid.UUID, language: str) -> ActivityFeed:
    """The feed of an answer that begins, in the caller's transaction (written as
    `create()` writes it, by a statement built once: every question opens one)."""
    feed = ActivityFeed(owner_id=owner_id, conversation_id=conversation_id, language=language)
    insert_row(feed)
    return feed


def append(
    feed_id: int, events: Sequence[RecordedEvent], *, above: int = 0, **fields: Any
) -> Appended:
    """Writes `events` after the feed's last stored one, numbered above it (and above
    `above`: seqs a dead turn may have shown), sealed after its head, and moves the feed's
    event count, head and reservation, with `fields` set on it too; in one transaction (the
    caller's, if any), the feed's row locked so two writers number one after the other."""
    with transaction.atomic():
        feed = ActivityFeed.objects.select_for_update().get(pk=feed_id)
        last, head = ActivityEvent.head_of(feed_id)
        count = ActivityEvent.objects.filter(feed_id=feed_id).aggregate(n=Count("pk"))["n"]
        rows = sealed_rows(feed, events, max(last, above) + 1, head)
        insert_rows(rows)
        numbered = [row.to_event() for row in rows]
        head = rows[-1].chain if rows else head
        reserved = max(feed.seq_reserved, numbered[-1].seq or 0) if rows else feed.seq_reserved
        ActivityFeed.objects.filter(pk=feed_id).update(
            event_count=count + len(rows), chain_head=head, seq_reserved=reserved, **fields
        )
    return Appended(numbered, head)


def append_late(feed_id: int, event: RecordedEvent) -> RecordedEvent:
    """Writes one event at the end of a feed that no turn is writing (a contact request
    after the answer) and closes the feed anew if it had ended; in one transaction. A record
    that failed its check before stays as it was: not sealed over."""
    with transaction.atomic():
        closed = ActivityFeed.objects.select_for_update().values_list("closing", flat=True)
        had_closing = bool(closed.get(pk=feed_id))
        holds = ActivityFeed.holds(feed_id)
        (written,) = append(feed_id, [event]).events
        if holds and had_closing:
            ActivityFeed.seal_end(feed_id)
    return written


def keep_held(feed_id: int, events: list[ActivityEvent], calls: list[ModelCall]) -> None:
    """Writes what a turn numbered and sealed but could not commit (its end met a database
    outage) past the events already stored, in the caller's transaction."""
    ActivityFeed.keep_held(feed_id, events, calls)


def interrupt(
    feed_id: int,
    lines: Sequence[RecordedEvent],
    *,
    above: int,
    fields: dict[str, Any],
    answer_text: str,
) -> Interrupted:
    """Ends the feed of a turn whose process died with `lines` (numbered above `above`) and
    `fields`, and closes it with `answer_text`, in the caller's transaction. A feed whose
    record fails its check (its last events removed, say) is ended without lines and
    without a seal: sealing after it would make the damage read intact."""
    if not ActivityFeed.holds(feed_id):
        ActivityFeed.end_unsealed(feed_id, fields)
        stored = ActivityEvent.objects.filter(feed_id=feed_id).aggregate(seq=Max("seq"))
        return Interrupted(last_seq=max(stored["seq"] or 0, above) + 1, sealed=False)
    appended = append(feed_id, lines, above=above, **fields)
    ActivityFeed.seal_end(feed_id, answer_sha256=text_digest(answer_text))
    return Interrupted(last_seq=appended.last_seq, sealed=True)


def pause(feed_id: int, *, event_count: int, head: str) -> None:
    """The turn waits for a decision: its feed says so, with its count and head."""
    ActivityFeed.objects.filter(pk=feed_id).update(
        state=ActivityFeed.State.WAITING, event_count=event_count, chain_head=head
    )


def beat(feed_id: int) -> bool:
    """The running turn is alive, in a commit's transaction; False when a Stop was asked for
    (the feed is then not marked alive: it is about to end)."""
    return bool(
        update_row(ActivityFeed, feed_id, {"heartbeat_at": timezone.now()}, stop_requested=False)
    )


async def request_stop(feed_id: int) -> None:
    """A Stop for a turn another process runs: it sees it at its next beat."""
    await ActivityFeed.objects.filter(pk=feed_id).aupdate(stop_requested=True)


def finish(feed_id: int, fields: dict[str, Any]) -> None:
    """Ends a feed with its closed fields (FeedRecorder.finished) and appends its closing to
    the ledger, in the caller's transaction."""
    ActivityFeed.close(feed_id, fields)


def hide_from_owner(*, conversation_id: uuid.UUID) -> None:
    """Its conversation was deleted: its owner no longer sees its feeds; admins audit them
    until they are purged."""
    ActivityFeed.objects.filter(conversation_id=conversation_id).update(hidden_from_owner=True)


def erase_for(user: Any, *, reason: str) -> None:
    """What an account's erasure does to activity's record, in the caller's transaction: its
    events keep no text, argument, result (structured or linked), progress message or error,
    its model calls no reasoning, its feeds are hidden and have no summary, their chains are
    sealed again (with the answers' texts empty) and the reseal recorded, and its feed
    preferences go. Its scores of other people's answers lose their note and its name."""
    # Events are append-only for everyone else; erasure is the one rewrite the audit allows.
    # tests/chat/test_erasure_columns.py fails on a text or JSON column this leaves filled.
    ActivityEvent.objects.filter(feed__owner=user).update(
        message="",
        arguments=None,
        result_summary="",
        result_content="",
        error="",
        progress_message="",
        result_structured=None,
        result_links=None,
    )
    ModelCall.objects.filter(feed__owner=user).update(reasoning="")
    # What it wrote of others' answers (ratings, labels): who and the note go, the judgement
    # stays; those feeds keep their answers' texts.
    scored = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.SCORE, arguments__by_id=user.pk)
    judged = set(scored.exclude(feed__owner=user).values_list("feed_id", flat=True))
    scored.update(message="", result_content="", arguments=None)
    reseal(sorted(judged), reason=reason)
    feeds = ActivityFeed.objects.filter(owner=user)
    feeds.update(hidden_from_owner=True, summary_text="")
    reseal(feeds.values_list("pk", flat=True), reason=reason, answer_text="")
    FeedPreferences.objects.filter(user=user).delete()
