"""The tamper-evident chain of each feed: every event stores a SHA-256 over its own content
and the previous event's hash in the same feed, so changing, removing or reordering a stored
event breaks every hash after it. Written with the event, in the same statement.

Plain Python over the row's values; `activity.models` calls it, `manage.py verify_audit` and
the admin check it. What it does and does not guarantee is in SECURITY.md."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# The first event of a feed links to this.
GENESIS = ""
# Every column of an event but its id and its hash, in a fixed order.
SEALED_FIELDS = (
    "feed_id", "seq", "kind", "icon", "message", "state", "tool", "call_id", "arguments",
    "ok", "result_summary", "error", "result_content", "duration_ms", "server", "progress",
    "progress_total", "progress_message", "progress_count", "result_structured", "created_at",
)  # fmt: skip
# Columns added since, on purpose, never by accident: sealed whenever they hold a value, so
# the events written before a column existed keep the hashes they were sealed with.
SEALED_WHEN_SET = ("result_links",)
ALL_SEALED = (*SEALED_FIELDS, *SEALED_WHEN_SET)


def _plain(value: Any) -> Any:
    """A value as every database gives it back: numbers at double precision (PostgreSQL's
    jsonb writes 1e2 as 100), times in UTC to the microsecond."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(float(value))
    if isinstance(value, datetime):
        return value.isoformat(timespec="microseconds")
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


def link(previous: str, values: Mapping[str, Any]) -> str:
    """The hash of an event whose sealed values are `values`, after the event `previous`."""
    sealed: list[Any] = [previous, [_plain(values[name]) for name in SEALED_FIELDS]]
    later = {
        name: _plain(values[name]) for name in SEALED_WHEN_SET if values.get(name) is not None
    }
    if later:
        sealed.append(later)
    content = json.dumps(
        sealed,
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class Check:
    """One feed's chain, checked: where it first breaks (None: intact) and its head."""

    events: int
    broken_at: int | None
    head: str

    @property
    def intact(self) -> bool:
        return self.broken_at is None


def check(rows: Iterable[Mapping[str, Any]]) -> Check:
    """Checks one feed's events, in seq order, each with its sealed values and `chain`."""
    previous, count, broken = GENESIS, 0, None
    for row in rows:
        count += 1
        if broken is None and row["chain"] != link(previous, row):
            broken = row["seq"]
        previous = row["chain"]
    return Check(count, broken, previous)
