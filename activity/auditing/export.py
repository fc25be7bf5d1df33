"""Feeds as data: the JSON form shared by the API and exports, and safe CSV rows.

Event JSON is exactly the live protocol (activity.recording.events.to_json)."""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from activity.models import ActivityEvent, ActivityFeed, ModelCall
from activity.recording.events import to_json
from activity.selectors import aevents_by_feed

logger = logging.getLogger("glassbox.export")

CSV_COLUMNS = [
    "feed_id", "conversation", "message", "user", "feed_state", "started_at", "model",
    "total_tokens", "cost",
    "seq", "type", "icon", "message_text", "state", "tool", "call_id", "arguments",
    "ok", "summary", "duration_ms", "decision", "by", "reason", "rating", "label", "note",
]  # fmt: skip
# A spreadsheet runs a cell that starts like a formula; prefixing a quote keeps it text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class SummaryData(TypedDict):
    icon: str
    text: str


class UsageData(TypedDict):
    """A turn's tokens; None is unknown (a provider that did not say)."""

    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None
    cached_tokens: int | None
    total_tokens: int | None
    cost: str | None


class FeedData(TypedDict):
    """A feed with its events, as the API, exports and downloads give it."""

    id: int
    conversation: str | None
    message: int | None
    user: str
    state: str
    summary: SummaryData
    started_at: str
    finished_at: str | None
    duration_ms: int | None
    tool_call_count: int
    failed_tool_count: int
    usage: UsageData
    events: list[dict[str, Any]]
    # Given by `GET /api/feeds/<id>/` only: each request to the model.
    model_calls: NotRequired[list[dict[str, Any]]]


def feed_data(
    feed: ActivityFeed,
    events: Iterable[ActivityEvent],
    *,
    message_id: int | None = None,
    username: str | None = None,
) -> FeedData:
    """`message_id` and `username` default to the annotations activity.selectors adds."""
    return {
        "id": feed.pk,
        "conversation": str(feed.conversation_id) if feed.conversation_id else None,
        "message": message_id if message_id is not None else feed.message_id,  # type: ignore[attr-defined]
        "user": username if username is not None else feed.username,  # type: ignore[attr-defined]
        "state": feed.state,
        "summary": {"icon": feed.summary_icon, "text": feed.summary_text},
        "started_at": feed.started_at.isoformat(),
        "finished_at": _iso(feed.finished_at),
        "duration_ms": feed.duration_ms,
        "tool_call_count": feed.tool_call_count,
        "failed_tool_count": feed.failed_tool_count,
        "usage": usage_data(feed),
        "events": [to_json(event.to_event()) for event in events],
    }


def usage_data(feed: ActivityFeed) -> UsageData:
    return {
        "model": feed.model,
        "prompt_tokens": feed.prompt_tokens,
        "completion_tokens": feed.completion_tokens,
        "reasoning_tokens": feed.reasoning_tokens,
        "cached_tokens": feed.cached_tokens,
        "total_tokens": feed.total_tokens,
        "cost": None if feed.cost is None else str(feed.cost),
    }


def model_calls_data(calls: Iterable[ModelCall], *, reasoning: bool) -> list[dict[str, Any]]:
    """Each request to the model; its reasoning only for those who may read it."""
    return [call.usage() | ({"reasoning": call.reasoning} if reasoning else {}) for call in calls]


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


def ndjson_line(data: FeedData) -> str:
    return json.dumps(data, ensure_ascii=False) + "\n"


def safe_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    # Spreadsheets skip leading spaces and line breaks before reading a formula.
    formula = text.startswith(FORMULA_STARTS) or text.lstrip(" \t\r\n").startswith(FORMULA_STARTS)
    return "'" + text if formula else text


def csv_rows(data: FeedData) -> list[list[str]]:
    """One row per event; a feed without events still gets one row."""
    common = [
        data["id"], data["conversation"], data["message"], data["user"], data["state"],
        data["started_at"], data["usage"]["model"], data["usage"]["total_tokens"],
        data["usage"]["cost"],
    ]  # fmt: skip
    rows = []
    event: dict[str, Any]
    for event in data["events"] or [{}]:
        rows.append(
            [
                *common,
                event.get("seq"),
                event.get("type"),
                event.get("icon"),
                event.get("message"),
                event.get("state"),
                event.get("tool"),
                event.get("call_id"),
                event.get("arguments"),
                event.get("ok"),
                event.get("summary"),
                event.get("duration_ms", event.get("waited_ms")),
                event.get("decision"),
                event.get("by"),
                event.get("reason"),
                event.get("value"),
                event.get("label"),
                event.get("note"),
            ]
        )
    return [[safe_cell(cell) for cell in row] for row in rows]


def csv_text(rows: Iterable[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


FORMATS = {
    "ndjson": "application/x-ndjson",
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
}
CHUNK = 500


async def export_stream(feeds, fmt: str) -> AsyncIterator[str]:
    """Every feed with its events, a chunk of feeds at a time (keyset by id), so memory stays
    flat however many events there are."""
    if fmt == "csv":
        yield csv_text([CSV_COLUMNS])
    elif fmt == "json":
        yield "["
    separator = ""
    last_id = 0
    while True:
        chunk = [feed async for feed in feeds.filter(id__gt=last_id).order_by("id")[:CHUNK]]
        if not chunk:
            break
        last_id = chunk[-1].pk
        events = await aevents_by_feed(feed.pk for feed in chunk)
        for feed in chunk:
            data = feed_data(feed, events[feed.pk])
            if fmt == "ndjson":
                yield ndjson_line(data)
            elif fmt == "csv":
                yield csv_text(csv_rows(data))
            else:
                yield separator + json.dumps(data, ensure_ascii=False)
                separator = ","
    if fmt == "json":
        yield "]"


def export_response(feeds: QuerySet[ActivityFeed], fmt: str) -> StreamingHttpResponse:
    """Streamed as it is read (an async iterator: Daphne would buffer a sync one whole). The
    API's export and the admin's action both answer with it (here, so that the admin, which
    every process imports as it starts, does not import the API and DRF with it)."""
    response = StreamingHttpResponse(
        ended_even_on_failure(export_stream(feeds, fmt), fmt), content_type=FORMATS[fmt]
    )
    extension = "json" if fmt == "json" else fmt
    response["Content-Disposition"] = f'attachment; filename="glassbox-feeds.{extension}"'
    return response


STOPPED = "The export stopped early because of a server error; ask for it again."


async def ended_even_on_failure(parts: AsyncIterator[str], fmt: str) -> AsyncIterator[str]:
    """The headers are gone once the first part is: a failure after them ends the body with a
    line that says so, instead of a connection left open or a file that looks whole."""
    sent = 0
    try:
        async for part in parts:
            sent += 1
            yield part
    except Exception:
        logger.exception("a feed export failed after %d parts", sent)
        if fmt == "ndjson":
            yield json.dumps({"error": STOPPED}) + "\n"
        elif fmt == "csv":
            yield csv_text([[STOPPED]])
        else:
            yield ("," if sent > 1 else "") + json.dumps({"error": STOPPED}) + "]"
