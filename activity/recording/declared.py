"""How an event's fields are declared once, and the forms derived from that declaration: its
JSON form on the wire (activity.recording.events.to_json, from_json) and its row (activity.models:
ActivityEvent.from_event, to_event); the seal follows the rows' columns (activity.recording.chain).

Each field of an event dataclass carries `declare(...)` as its metadata: its JSON key (or
none: it never leaves the server), when the key is left out, and the `ActivityEvent` column
it is stored in (or why it is not stored). Plain Python, as activity.recording.events is.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

# The key of the metadata a declared field carries.
KEY = "glassbox"
_REQUIRED = object()


@dataclasses.dataclass(frozen=True, slots=True)
class Declared:
    """One field of an event, declared."""

    # Its JSON key; "a.b" nests it under "a"; None: it is not on the wire.
    key: str | None
    # The key is left out when the value is the field's default.
    omit_default: bool
    # The key is given only when this other field's key is.
    shown_with: str | None
    # What a JSON form without the key gives (_REQUIRED: the field's default, or an error).
    missing: Any
    # A received value, checked (a bad one raises ValueError or gives a safe value).
    read: Callable[[Any], Any] | None
    # The value as JSON writes it.
    write: Callable[[Any], Any] | None
    # Its column of ActivityEvent, or None with `unstored` saying why; "a.b" keeps it under
    # key "b" of JSON column "a" (left out at its default), beside the other fields kept there.
    column: str | None
    unstored: str
    # Longer text is cut to this many characters when it is stored.
    limit: int | None
    # The value as its column holds it, and back.
    to_column: Callable[[Any], Any] | None
    from_column: Callable[[Any], Any] | None


def declare(
    *,
    key: str | bool | None = True,
    omit_default: bool = False,
    shown_with: str | None = None,
    missing: Any = _REQUIRED,
    read: Callable[[Any], Any] | None = None,
    write: Callable[[Any], Any] | None = None,
    column: str | None = None,
    unstored: str = "",
    limit: int | None = None,
    to_column: Callable[[Any], Any] | None = None,
    from_column: Callable[[Any], Any] | None = None,
) -> Mapping[str, Any]:
    """The metadata of a field: `field(metadata=declare(...))`. `key=True` (the default) is
    the field's own name; `key=False` keeps it off the wire."""
    declared = Declared(
        key=None if key is False else ("" if key is True else key),
        omit_default=omit_default,
        shown_with=shown_with,
        missing=missing,
        read=read,
        write=write,
        column=column,
        unstored=unstored,
        limit=limit,
        to_column=to_column,
        from_column=from_column,
    )
    return {KEY: declared}


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """A declared field with its name and default."""

    name: str
    declared: Declared
    default: Any

    @property
    def key(self) -> str | None:
        key = self.declared.key
        return self.name if key == "" else key


def _default_of(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return _REQUIRED


@functools.cache
def fields_of(cls: type) -> tuple[Field, ...]:
    """The declared fields of an event class, `type` and `seq` first (the wire's order)."""
    found = []
    for field in dataclasses.fields(cls):
        declared = field.metadata.get(KEY)
        if declared is None:
            raise TypeError(
                f"{cls.__name__}.{field.name} is not declared (activity.recording.declared)"
            )
        found.append(Field(field.name, declared, _default_of(field)))
    first = {"type": 0, "seq": 1}
    return tuple(sorted(found, key=lambda field: first.get(field.name, 2)))


@functools.cache
def _wire_plan(cls: type) -> tuple[tuple[str, str, str, bool, Any, str | None, Any], ...]:
    """What wire_form does for each field of `cls` on the wire, worked out once (it runs for
    every line a turn shows)."""
    plan = []
    for field in fields_of(cls):
        if field.key is None:
            continue
        outer, _, inner = field.key.partition(".")
        declared = field.declared
        plan.append(
            (
                field.name,
                outer,
                inner,
                declared.omit_default,
                field.default,
                declared.shown_with,
                declared.write,
            )
        )
    return tuple(plan)


def wire_form(event: Any) -> dict[str, Any]:
    """The JSON form of an event, as its declaration says."""
    cls: type = type(event)
    data: dict[str, Any] = {}
    given: set[str] = set()
    for name, outer, inner, omit_default, default, shown_with, write in _wire_plan(cls):
        value = getattr(event, name)
        if omit_default and value == default:
            continue
        given.add(name)
        # The field it goes with may come later: looked up then.
        if (
            shown_with is not None
            and shown_with not in given
            and not _given_later(event, shown_with)
        ):
            continue
        if write is not None:
            value = write(value)
        if inner:
            data.setdefault(outer, {})[inner] = value
        else:
            data[outer] = value
    return data


def _given_later(event: Any, name: str) -> bool:
    cls: type = type(event)
    for other, _, _, omit_default, default, _, _ in _wire_plan(cls):
        if other == name:
            return not (omit_default and getattr(event, name) == default)
    return False


def read_wire(cls: type, data: Mapping[str, Any]) -> Any:
    """The event of class `cls` a JSON form gives; a missing required key raises KeyError."""
    values: dict[str, Any] = {}
    for field in fields_of(cls):
        key = field.key
        if key is None or field.name == "type":
            continue
        outer, _, inner = key.partition(".")
        source = (data.get(outer) or {}) if inner else data
        name = inner or key
        declared = field.declared
        if name in source:
            value = source[name]
            values[field.name] = declared.read(value) if declared.read else value
        elif declared.missing is not _REQUIRED:
            values[field.name] = declared.missing
        elif field.default is _REQUIRED:
            raise KeyError(key)
    return cls(**values)


def stored_fields(cls: type) -> Iterator[Field]:
    return (field for field in fields_of(cls) if field.declared.column is not None)


def computed_columns(cls: type) -> Mapping[str, Callable[[Any], Any]]:
    """Columns an event fills from what it says rather than from one field (a decision's
    `ok`): read by the audit, never read back into the event."""
    return getattr(cls, "COMPUTED_COLUMNS", {})


def row_values(event: Any) -> dict[str, Any]:
    """The columns of ActivityEvent that hold an event, by column name."""
    cls: type = type(event)
    values = {name: compute(event) for name, compute in computed_columns(cls).items()}
    for field in stored_fields(cls):
        declared = field.declared
        value = getattr(event, field.name)
        outer, _, inner = str(declared.column).partition(".")
        if inner:
            if value != field.default:
                if declared.to_column is not None:
                    value = declared.to_column(value)
                values.setdefault(outer, {})[inner] = value
            continue
        if declared.to_column is not None:
            value = declared.to_column(value)
        if declared.limit is not None:
            value = value[: declared.limit]
        values[outer] = value
    return values


def from_row(cls: type, column: Callable[[str], Any]) -> Any:
    """The event of class `cls` a row holds (`column` reads one of its columns)."""
    values = {}
    for field in stored_fields(cls):
        if field.name == "type":
            continue
        declared = field.declared
        outer, _, inner = str(declared.column).partition(".")
        value = column(outer)
        if inner:
            value = (value or {}).get(inner, field.default)
        values[field.name] = declared.from_column(value) if declared.from_column else value
    return cls(**values)


def columns_of(classes: tuple[type, ...]) -> tuple[str, ...]:
    """Every column the events of `classes` are stored in, in the order first declared."""
    names: dict[str, None] = {}
    for cls in classes:
        for field in stored_fields(cls):
            names[str(field.declared.column).partition(".")[0]] = None
        names |= dict.fromkeys(computed_columns(cls))
    return tuple(names)
