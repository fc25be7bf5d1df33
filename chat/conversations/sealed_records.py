"""The records chat keeps of a turn, checked against what its feed sealed (activity cannot
read them: it never imports chat). Registered with activity.auditing.audit when chat starts, so
`verify_audit`, the admin and the evidence check them with the chain.

What is compared: the answer's text with its closing; each approval's arguments and
fingerprint with the call its chain holds, and its decision, reason, wait and receipt (the
fingerprint decided on, the edited arguments) with its sealed decision; each MCP question's
outcome and answer with the line that sealed them (chat.asks.elicitations). A question that
ended without that line (its call ended first, or it ended before lines carried it) has
nothing to be compared with."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.chain import json_digest, text_digest
from activity.recording.receipts import fingerprint_or_blank
from chat.models import Elicitation, Message, ToolApproval

# The columns of an approval and of a question the audit compares with their sealed events.
APPROVAL_COLUMNS = (
    "pk", "answer__feed_id", "call_id", "decision", "asked_at", "decided_at", "reason",
    "arguments", "fingerprint", "edited_arguments",
)  # fmt: skip
QUESTION_COLUMNS = ("pk", "answer__feed_id", "state", "content")
# The columns of the events the rows are compared with (beside kind, call id and state).
SEALED_COMPARED = ("arguments", "duration_ms", "result_summary")
# A decision's reason as its event's column keeps it (activity.recording.events.Decision).
SEALED_REASON = 400
# Decided rows whose decision has no event: a Stop on a waiting turn records its ⏹ line.
UNSEALED_DECISIONS = ("", ToolApproval.Decision.STOPPED)


def sealed_records_check(
    feeds: Sequence[ActivityFeed], events: Mapping[int, list[dict[str, Any]]]
) -> dict[int, str]:
    """A problem for each feed whose answer's text is not the one its closing sealed, or one
    of whose approvals or questions is not what its chain holds (the first such row named)."""
    ids = [feed.pk for feed in feeds]
    problems = _answer_problems(feeds)
    approvals = ToolApproval.objects.filter(answer__feed_id__in=ids).order_by("pk")
    questions = Elicitation.objects.filter(answer__feed_id__in=ids).order_by("asked_at")
    asked, answered = _grouped(approvals, APPROVAL_COLUMNS), _grouped(questions, QUESTION_COLUMNS)
    for feed_id in ids:
        sealed = events.get(feed_id, [])
        problem = feed_approvals_problem(asked.get(feed_id, []), sealed) or (
            feed_questions_problem(answered.get(feed_id, []), sealed)
        )
        if problem:
            problems.setdefault(feed_id, problem)
    return problems


def _answer_problems(feeds: Sequence[ActivityFeed]) -> dict[int, str]:
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
    return problems


def _grouped(rows: Any, columns: Sequence[str]) -> dict[int, list[dict[str, Any]]]:
    grouped: dict[int, list[dict[str, Any]]] = {}
    for row in rows.values(*columns):
        grouped.setdefault(row["answer__feed_id"], []).append(row)
    return grouped


def _same(one: Any, other: Any) -> bool:
    """Two JSON values as the chain would seal them (a number the same in every database)."""
    return json_digest(one) == json_digest(other)


def approval_problem(row: Mapping[str, Any], call: Any, decision: Mapping[str, Any] | None) -> str:
    """What of one approval (its columns, APPROVAL_COLUMNS) is not what its feed sealed: the
    call's `arguments` as the chain holds them, and its decision's event (None: none)."""
    name = f"approval {row['pk']} (call {row['call_id']})"
    asked = call or {}
    if not _same(row["arguments"] or {}, asked):
        return f"{name}: its arguments are not the ones its chain sealed"
    if row["fingerprint"] and row["fingerprint"] != fingerprint_or_blank(asked):
        return f"{name}: its fingerprint is not the one of the arguments its chain sealed"
    if row["decision"] in UNSEALED_DECISIONS:
        if decision is not None:
            return f"{name}: its chain holds a decision the row does not"
        return ""
    if decision is None:
        return f"{name}: its decision is not in its chain"
    waited = None
    if row["decided_at"] is not None:
        waited = int((row["decided_at"] - row["asked_at"]).total_seconds() * 1000)
    if (decision["state"], decision["duration_ms"]) != (row["decision"], waited):
        return f"{name}: its decision is not the one its chain sealed"
    if decision["result_summary"] != (row["reason"] or "")[:SEALED_REASON]:
        return f"{name}: its reason is not the one its chain sealed"
    receipt = decision["arguments"] or {}
    edited = row["edited_arguments"]
    decided_on = row["fingerprint"] if edited is None else fingerprint_or_blank(edited)
    if not _same(receipt.get("edited_arguments"), edited):
        return f"{name}: its edited arguments are not the ones its chain sealed"
    if receipt.get("fingerprint", "") != decided_on:
        return f"{name}: the fingerprint it was decided on is not the one its chain sealed"
    return ""


def feed_approvals_problem(
    rows: Sequence[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> str:
    """The first problem of a feed's approvals against its sealed events (their columns)."""
    calls: dict[str, Any] = {}
    decisions: dict[str, Mapping[str, Any]] = {}
    for event in events:
        if event["kind"] == ActivityEvent.Kind.TOOL_CALL:
            calls.setdefault(event["call_id"], event["arguments"])
        elif event["kind"] == ActivityEvent.Kind.DECISION:
            decisions[event["call_id"]] = event
    for row in rows:
        problem = approval_problem(
            row, calls.get(row["call_id"]), decisions.pop(row["call_id"], None)
        )
        if problem:
            return problem
    for call_id in decisions:
        return f"its chain holds a decision on call {call_id} that no approval has"
    return ""


def sealed_answers(events: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The questions a feed's lines sealed, by id: their outcome and answer's digest."""
    found = {}
    for event in events:
        record = event["arguments"]
        if event["kind"] != ActivityEvent.Kind.STATUS or not isinstance(record, Mapping):
            continue
        if isinstance(record.get("question"), str):
            found[record["question"]] = record
    return found


def question_problem(row: Mapping[str, Any], sealed: Mapping[str, Any] | None) -> str:
    """What of one question (its columns, QUESTION_COLUMNS) is not what its line sealed."""
    if sealed is None:
        return ""
    name = f"question {row['pk']}"
    if sealed.get("outcome") != row["state"]:
        return f"{name}: its outcome is not the one its chain sealed"
    if sealed.get("answer_sha256", "") != json_digest(row["content"]):
        return f"{name}: its answer is not the one its chain sealed"
    return ""


def feed_questions_problem(
    rows: Sequence[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> str:
    sealed = sealed_answers(events)
    for row in rows:
        if problem := question_problem(row, sealed.pop(str(row["pk"]), None)):
            return problem
    for question_id in sealed:
        return f"question {question_id}, which its chain sealed, is gone"
    return ""


def _sealed_of(feed_id: int | None, call_id: str, kinds: Sequence[str]) -> list[dict[str, Any]]:
    events = ActivityEvent.objects.filter(feed_id=feed_id, call_id=call_id, kind__in=kinds)
    return list(events.order_by("seq").values("kind", "call_id", "state", *SEALED_COMPARED))


def approval_integrity(approval: ToolApproval) -> str:
    """One approval against its feed's sealed call and decision, for the admin: "" when they
    agree, else the problem (one query)."""
    kinds = (ActivityEvent.Kind.TOOL_CALL, ActivityEvent.Kind.DECISION)
    events = _sealed_of(approval.answer.feed_id, approval.call_id, kinds)
    row = {name: getattr(approval, name) for name in APPROVAL_COLUMNS if "__" not in name}
    return feed_approvals_problem([row], events)


def question_integrity(question: Elicitation) -> tuple[bool, str]:
    """One MCP question against the line its feed sealed for it, for the admin: whether a
    line sealed it, and "" when they agree, else the problem (one query)."""
    events = _sealed_of(question.answer.feed_id, question.call_id, (ActivityEvent.Kind.STATUS,))
    sealed = sealed_answers(events).get(str(question.pk))
    row = {name: getattr(question, name) for name in QUESTION_COLUMNS if "__" not in name}
    return sealed is not None, question_problem(row, sealed)
