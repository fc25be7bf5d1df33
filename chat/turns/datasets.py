"""The eval dataset (docs/dataset.md): one JSON line per rated or labelled answer or tool
call, with what the model was given and what it did, for evaluating the agent. Read a chunk
of feeds at a time, so memory stays flat however many there are."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, assert_never

from asgiref.sync import sync_to_async

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
from activity.selectors import events_by_feed, scored_feed_ids, tools_offered_by_feed
from chat.models import Message
from chat.turns.history import model_history

FORMAT_VERSION = 1
# Feeds read at a time.
CHUNK = 100


@dataclass(frozen=True, slots=True)
class DatasetFilters:
    """Which records: a score written in [since, until); a current rating of this value; a
    current label; a call of this tool (or an answer whose turn called it)."""

    since: datetime | None = None
    until: datetime | None = None
    rating: str = ""
    label: str = ""
    tool: str = ""


def dataset_lines(filters: DatasetFilters) -> Iterator[str]:
    """Every record, a JSON line each (for `manage.py export_dataset`)."""
    after = 0
    while True:
        after, lines = _chunk(filters, after)
        if not after:
            return
        yield from lines


async def adataset_lines(filters: DatasetFilters) -> AsyncIterator[str]:
    """The same, for a streamed response (Daphne buffers a sync iterator whole)."""
    after = 0
    while True:
        after, lines = await sync_to_async(_chunk)(filters, after)
        if not after:
            return
        for line in lines:
            yield line


def _chunk(filters: DatasetFilters, after: int) -> tuple[int, list[str]]:
    """The lines of the next feeds with scores after feed `after`, and the last feed read
    (0: there are none left)."""
    feed_ids = scored_feed_ids(after=after, limit=CHUNK, since=filters.since, until=filters.until)
    if not feed_ids:
        return 0, []
    rows = events_by_feed(feed_ids)
    offered = tools_offered_by_feed(feed_ids)
    answers = Message.objects.filter(feed_id__in=feed_ids).select_related("feed")
    lines = []
    for answer in answers.order_by("feed_id"):
        events = [row.to_event() for row in rows.get(answer.feed_id or 0, [])]
        tools = offered.get(answer.feed_id or 0, [])
        for record in turn_records(answer, events, filters, tools):
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return feed_ids[-1], lines


def turn_records(
    answer: Message,
    events: Sequence[RecordedEvent],
    filters: DatasetFilters,
    offered: Sequence[str] = (),
) -> Iterator[dict[str, Any]]:
    """The records of one turn: its answer's, then each rated or labelled call's; `offered`
    is what its model requests offered (activity.selectors.tools_offered_by_feed)."""
    calls: dict[str, dict[str, Any]] = {}
    scores: dict[str, list[Score]] = {}
    for event in events:
        match event:
            case ToolCall():
                calls[event.call_id] = _call(event)
            case ToolResult() if event.call_id in calls:
                calls[event.call_id] |= {
                    "ok": event.ok,
                    "summary": event.summary,
                    "result": event.content,
                    "server": event.server,
                    "duration_ms": event.duration_ms,
                }
            case Decision() if event.call_id in calls:
                calls[event.call_id]["approval"] = {
                    "decision": event.decision,
                    "by": event.by,
                    "reason": event.reason,
                }
            case Score():
                scores.setdefault(event.call_id, []).append(event)
            # A plan and a server's log lines are how the work was shown, not what was judged.
            case Status() | ToolResult() | Decision() | Plan() | ToolLog() | AppView() | AppNote():
                pass
            case _:
                assert_never(event)
    tools = [call["tool"] for call in calls.values()]
    turn: dict[str, Any] | None = None
    for target, judged in scores.items():
        if target and target not in calls:
            continue
        ratings, labels = _current(judged)
        if not _wanted(filters, judged, ratings, labels, calls.get(target), tools):
            continue
        if turn is None:
            turn = _turn(answer, list(calls.values()), offered)
        yield {
            "id": f"{answer.pk}:{target or 'answer'}",
            "target": "call" if target else "answer",
            **turn,
            "call": calls.get(target),
            "ratings": ratings,
            "labels": labels,
        }


def _call(event: ToolCall) -> dict[str, Any]:
    # Arguments and results as JSON text: their shapes differ from tool to tool, and a
    # dataset's columns need one type each.
    return {
        "call_id": event.call_id,
        "tool": event.tool,
        "server": "",
        "arguments": json.dumps(event.arguments, ensure_ascii=False, sort_keys=True),
        "ok": None,
        "summary": "",
        "result": "",
        "duration_ms": None,
        "approval": None,
    }


def _current(judged: list[Score]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each person's latest rating and latest label of one target."""
    ratings: dict[Any, Score] = {}
    labels: dict[Any, Score] = {}
    for score in judged:
        person = score.by_id if score.by_id is not None else score.by
        if score.value:
            ratings[person] = score
        if score.label:
            labels[person] = score
    return (
        [_judgement(score, "value") for score in ratings.values()],
        [_judgement(score, "label") for score in labels.values()],
    )


def _judgement(score: Score, what: str) -> dict[str, Any]:
    return {
        what: getattr(score, what),
        "note": score.note,
        "by": score.by,
        "at": score.at.isoformat() if score.at else None,
    }


def _wanted(
    filters: DatasetFilters,
    judged: list[Score],
    ratings: list[dict[str, Any]],
    labels: list[dict[str, Any]],
    call: dict[str, Any] | None,
    tools: list[str],
) -> bool:
    def within(score: Score) -> bool:
        at = score.at
        return at is None or (
            (filters.since is None or at >= filters.since)
            and (filters.until is None or at < filters.until)
        )

    if (filters.since or filters.until) and not any(within(score) for score in judged):
        return False
    if filters.rating and all(rating["value"] != filters.rating for rating in ratings):
        return False
    if filters.label and all(label["label"] != filters.label for label in labels):
        return False
    if filters.tool:
        return call["tool"] == filters.tool if call else filters.tool in tools
    return True


def _turn(answer: Message, calls: list[dict[str, Any]], offered: Sequence[str]) -> dict[str, Any]:
    """What the model was given and what it did: its memory is the conversation as the
    model saw it before the question (chat.turns.history)."""
    history = [_message(item) for item in model_history(answer)]
    question = history.pop() if history and history[-1]["role"] == "user" else None
    feed = answer.feed
    return {
        "version": FORMAT_VERSION,
        "conversation": str(answer.conversation_id),
        "message": answer.pk,
        "model": feed.model if feed else "",
        "state": answer.state,
        "started_at": feed.started_at.isoformat() if feed else None,
        "question": question["content"] if question else "",
        "memory": history,
        "tools_offered": list(offered),
        "tools_called": sorted({call["tool"] for call in calls}),
        "calls": calls,
        "answer": answer.content,
    }


def _message(item: dict[str, Any]) -> dict[str, str]:
    """A chat message in one shape for every role (a dataset's columns need one type)."""
    content = item.get("content")
    calls = item.get("tool_calls")
    return {
        "role": str(item.get("role", "")),
        "content": content if isinstance(content, str) else "",
        "tool_calls": json.dumps(calls, ensure_ascii=False) if calls else "",
        "tool_call_id": str(item.get("tool_call_id", "")),
    }
