"""The records chat keeps of a turn, checked against what its feed sealed (activity cannot
read them: it never imports chat). Registered with activity.auditing.audit when chat starts, so
`verify_audit`, the admin and the evidence check them with the chain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.chain import text_digest
from chat.models import Message, ToolApproval


def sealed_records_check(
    feeds: Sequence[ActivityFeed], events: Mapping[int, list[dict[str, Any]]]
) -> dict[int, str]:
    """A problem for each feed whose answer's text is not the one its closing sealed, or
    whose approvals' decisions are not the decisions its chain holds."""
    ids = [feed.pk for feed in feeds]
    texts = dict(Message.objects.filter(feed_id__in=ids).values_list("feed_id", "content"))
    problems: dict[int, str] = {}
    for feed in feeds:
        if not feed.answer_sha256:
            continue
        if feed.pk not in texts:
            problems[feed.pk] = "its answer is gone"
        elif text_digest(texts[feed.pk]) != feed.answer_sha256:
            problems[feed.pk] = "its answer's text is not the text its closing sealed"
    decided = (
        ToolApproval.objects.filter(answer__feed_id__in=ids)
        .exclude(decision="")
        # A Stop on a waiting turn records its ⏹ line, not a decision.
        .exclude(decision=ToolApproval.Decision.STOPPED)
        .values_list("answer__feed_id", "call_id", "decision", "asked_at", "decided_at")
    )
    rows: dict[int, set[tuple[str, str, int | None]]] = {feed_id: set() for feed_id in ids}
    for feed_id, call_id, decision, asked_at, decided_at in decided:
        waited = (
            None if decided_at is None else int((decided_at - asked_at).total_seconds() * 1000)
        )
        rows[feed_id].add((call_id, decision, waited))
    for feed_id in ids:
        sealed = {
            (event["call_id"], event["state"], event["duration_ms"])
            for event in events.get(feed_id, [])
            if event["kind"] == ActivityEvent.Kind.DECISION
        }
        if rows[feed_id] != sealed:
            problems.setdefault(
                feed_id, "its approvals' decisions are not the decisions its chain holds"
            )
    return problems
