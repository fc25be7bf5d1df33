"""The conversation list a page at a time. A page after the first starts after the sort keys
of the row before it (its link carries them), so no row before it is read again: an offset
computed each skipped row's counts and titles (bench/history_scale.py: page 50 cost 82 ms
p95 at 10,000 conversations, the first 65 ms)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import (
    BooleanField,
    DateTimeField,
    F,
    Func,
    IntegerField,
    QuerySet,
    UUIDField,
    Value,
)
from django.db.models.lookups import LessThan

PAGE_SIZE = 30

# The lists' sort keys (chat.conversations.selectors), each descending, and how a link
# carries them.
_KINDS: dict[str, tuple[Callable[[str], Any], Any]] = {
    "words": (int, IntegerField()),
    "hits": (int, IntegerField()),
    "last_activity": (datetime.fromisoformat, DateTimeField()),
    "created_at": (datetime.fromisoformat, DateTimeField()),
    "pk": (uuid.UUID, UUIDField()),
}
_SEPARATOR = "~"


class _Row(Func):
    """A row value, compared as a whole: the keys' expressions are written once."""

    template = "(%(expressions)s)"
    output_field = BooleanField()

    def get_group_by_cols(self) -> list[Any]:
        # Its parts, never the row itself: a row of given values is no column to group by.
        return [col for part in self.get_source_expressions() for col in part.get_group_by_cols()]


@dataclass(frozen=True, slots=True)
class ListPage:
    """A page of the list, told whether another follows by reading one row more than it
    shows (no count of every match), and where that one starts. A page past the end is
    empty."""

    number: int
    rows: list[Any]
    has_next: bool
    after: str = ""

    @classmethod
    def of(cls, rows: QuerySet[Any], number: int, after: str | None) -> ListPage:
        keys = _keys(rows)
        start = _read(after, keys) if number > 1 else None
        if start is not None:
            found = list(_following(rows, keys, start)[: PAGE_SIZE + 1])
        else:
            # A link without keys (bookmarked, or the keys were mangled) still works.
            offset = (number - 1) * PAGE_SIZE
            found = list(rows[offset : offset + PAGE_SIZE + 1])
        shown, has_next = found[:PAGE_SIZE], len(found) > PAGE_SIZE
        return cls(number, shown, has_next, _written(shown[-1], keys) if has_next else "")

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


def _keys(rows: QuerySet[Any]) -> list[str]:
    order = [str(key) for key in rows.query.order_by]
    assert all(key.startswith("-") and key[1:] in _KINDS for key in order), order
    return [key[1:] for key in order]


def _written(row: Any, keys: Sequence[str]) -> str:
    values = (getattr(row, key) for key in keys)
    return _SEPARATOR.join(v.isoformat() if isinstance(v, datetime) else str(v) for v in values)


def _read(text: str | None, keys: Sequence[str]) -> list[Any] | None:
    parts = (text or "").split(_SEPARATOR)
    if len(parts) != len(keys):
        return None
    try:
        values = [_KINDS[key][0](part) for key, part in zip(keys, parts, strict=True)]
    except ValueError:
        return None
    if any(isinstance(v, datetime) and v.tzinfo is None for v in values):
        return None
    return values


def _following(rows: QuerySet[Any], keys: Sequence[str], values: Sequence[Any]) -> QuerySet[Any]:
    """The rows after these keys' values in the list's order (every key descending)."""
    ours = _Row(*(F(key) for key in keys))
    given = _Row(
        *(Value(v, output_field=_KINDS[key][1]) for key, v in zip(keys, values, strict=True))
    )
    return rows.filter(LessThan(ours, given))
