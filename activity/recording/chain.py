"""The tamper-evident chain of each feed: every event stores a SHA-256 over its own content
and the previous event's hash in the same feed, so changing, removing or reordering a stored
event breaks every hash after it. Written with the event, in the same statement. A feed that
ends is closed by one more hash over its head and what is not an event (the feed's own
fields, its model calls, the answer's text), and every closing is appended to one ledger of
all feeds, so a feed deleted whole leaves a gap.

Plain Python over the row's values; `activity.models` calls it, `manage.py verify_audit` and
the admin check it. What it does and does not guarantee is in SECURITY.md."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from activity.recording.declared import columns_of
from activity.recording.events import RECORDED_TYPES

# The first event of a feed links to this, and the first entry of the ledger.
GENESIS = ""
# How an event is sealed: 1, every number as the string of a float (events written before
# version 2 keep it); 2, every value with its JSON type (see `_typed`).
SEAL_V1 = 1
SEAL_V2 = 2
SEAL_CURRENT = SEAL_V2
# Every column of an event but its id and its hash, in a fixed order (version 1). Frozen:
# stored hashes were computed over exactly these.
SEALED_FIELDS = (
    "feed_id", "seq", "kind", "icon", "message", "state", "tool", "call_id", "arguments",
    "ok", "result_summary", "error", "result_content", "duration_ms", "server", "progress",
    "progress_total", "progress_message", "progress_count", "result_structured", "created_at",
)  # fmt: skip
# What version 2 seals in full, its own version included. Frozen as well.
SEALED_V2_BASE = (*SEALED_FIELDS, "result_links", "seal_version")
# The columns of a row that are not an event's fields (activity.recording.events declares those).
ROW_COLUMNS = ("feed_id", "created_at", "seal_version")
# The columns no seal covers, and why (tests/activity/test_sealed_columns.py checks that
# every column is sealed or named here).
UNSEALED = {"id": "the row's id, not the record", "chain": "the seal itself"}
# Every column an event is stored in, as the events declare them.
DECLARED = (*ROW_COLUMNS, *columns_of(tuple(RECORDED_TYPES.values())))
# Columns added since a version was fixed are sealed whenever they hold a value (they are
# nullable), so the events written before a column existed keep the hashes they were sealed
# with: adding a field to an event and its column seals it, with no edit here.
ADDED_SINCE_V2 = tuple(name for name in DECLARED if name not in SEALED_V2_BASE)
SEALED_WHEN_SET = ("result_links", *ADDED_SINCE_V2)
SEALED_V2 = (*SEALED_V2_BASE, *ADDED_SINCE_V2)
ALL_SEALED = SEALED_V2


def _plain(value: Any) -> Any:
    """Version 1: a value as every database gives it back, numbers at double precision
    (PostgreSQL's jsonb writes 1e2 as 100), times in UTC to the microsecond."""
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


_AS_IS = frozenset((type(None), bool, str, int))


def _typed(value: Any) -> Any:
    """Version 2: a value with its JSON type kept (a number stays a number, a string a string)
    and in the one form every database gives it back. A float with no fraction is written as
    the integer it is, exactly (PostgreSQL's jsonb reads 1e20 and 2.0 as numbers without a
    point and gives 1e20 back as an int); any other float keeps its shortest repr, which
    jsonb stores digit for digit. So 58000 and 58000.0 are the same JSON number, as RFC 8785
    has it, and "58000.0" is not."""
    if type(value) in _AS_IS:
        return value
    if isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return int(Decimal(repr(value))) if value.is_integer() else value
    if isinstance(value, Decimal):
        # A column's decimal (a cost), as text without the column's trailing zeros.
        return format(value.normalize(), "f")
    if isinstance(value, datetime):
        return value.isoformat(timespec="microseconds")
    if isinstance(value, Mapping):
        return {str(key): _typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_typed(item) for item in value]
    return str(value)


def _digest(content: Any) -> str:
    text = json.dumps(content, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def link(previous: str, values: Mapping[str, Any]) -> str:
    """The hash of an event whose sealed values are `values`, after the event `previous`,
    by the seal version the values name (1 when they name none: rows from before it)."""
    if values.get("seal_version", SEAL_V1) == SEAL_V1:
        return _link_v1(previous, values)
    # In SEALED_V2_BASE's order, fixed with the version: the names need not be hashed too.
    sealed: list[Any] = [SEAL_V2, previous, [_typed(values[name]) for name in SEALED_V2_BASE]]
    if later := _set(values, ADDED_SINCE_V2, _typed):
        sealed.append(later)
    return _digest(sealed)


def _link_v1(previous: str, values: Mapping[str, Any]) -> str:
    sealed: list[Any] = [previous, [_plain(values[name]) for name in SEALED_FIELDS]]
    if later := _set(values, SEALED_WHEN_SET, _plain):
        sealed.append(later)
    return _digest(sealed)


def _set(
    values: Mapping[str, Any], names: Sequence[str], form: Callable[[Any], Any]
) -> dict[str, Any]:
    """The columns of `names` that hold a value, as `form` seals them."""
    return {name: form(values[name]) for name in names if values.get(name) is not None}


# What a feed's closing seals besides its head: every column that says what the turn was,
# none of those that change legitimately after it (opened_count, first_opened_at,
# hidden_from_owner) or only matter while it runs (heartbeat_at, stop_requested,
# seq_reserved), and the closing itself.
CLOSED_FEED_FIELDS = (
    "id", "owner_id", "conversation_id", "state", "summary_icon", "summary_text", "started_at",
    "finished_at", "language", "event_count", "tool_call_count", "failed_tool_count", "model",
    "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "total_tokens",
    "cost", "chain_head", "answer_sha256",
)  # fmt: skip
# Each model call as the turn's recorder knows it, resumed or not (its cost and time are not:
# the feed's total cost is).
CLOSED_CALL_FIELDS = (
    "round", "model", "duration_ms", "thinking_ms", "reasoning", "prompt_tokens",
    "completion_tokens", "reasoning_tokens", "cached_tokens",
)  # fmt: skip
CLOSING_VERSION = 1


def text_digest(text: str) -> str:
    """The SHA-256 of an answer's text, as a feed's closing seals it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def json_digest(value: Any) -> str:
    """The SHA-256 of a JSON value as the chain seals it (`_typed`: the same in every
    database), for a record kept outside activity that an event vouches for (an MCP
    question's answer); "" for none."""
    return "" if value is None else _digest(["value", _typed(value)])


def closing(feed: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]) -> str:
    """The hash that closes a feed: its fields (the head among them) and its model calls."""
    return _digest(
        [
            "closing",
            CLOSING_VERSION,
            {name: _typed(feed[name]) for name in CLOSED_FEED_FIELDS},
            [{name: _typed(call[name]) for name in CLOSED_CALL_FIELDS} for call in calls],
        ]
    )


def ledger_entry(previous: str, feed_id: int, sealed: str) -> str:
    """An entry of the ledger of all feeds: this feed's closing (or why it went), after the
    entry `previous`."""
    return _digest(["ledger", previous, feed_id, sealed])


@dataclass(frozen=True, slots=True)
class Check:
    """One feed's chain, checked: where it first breaks (None: intact), its head, and every
    hash on it (to find a head recorded earlier)."""

    events: int
    broken_at: int | None
    head: str
    hashes: frozenset[str] = frozenset()

    @property
    def intact(self) -> bool:
        return self.broken_at is None


def check(rows: Iterable[Mapping[str, Any]]) -> Check:
    """Checks one feed's events, in seq order, each with its sealed values and `chain`."""
    previous, count, broken = GENESIS, 0, None
    hashes = {GENESIS}
    for row in rows:
        count += 1
        if broken is None and row["chain"] != link(previous, row):
            broken = row["seq"]
        previous = row["chain"]
        hashes.add(previous)
    return Check(count, broken, previous, frozenset(hashes))
