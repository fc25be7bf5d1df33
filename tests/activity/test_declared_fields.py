"""A field of an event is declared once: its JSON form, its row and the seal's columns follow
from that declaration, with no second list to keep in step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from activity.recording.declared import (
    columns_of,
    declare,
    from_row,
    read_wire,
    row_values,
    wire_form,
)


@dataclass(frozen=True, slots=True)
class Flagged:
    """An event as a new kind would be declared."""

    note: str = field(metadata=declare(column="note_text", limit=5))
    secret: str = field(default="", metadata=declare(key=False, column="secret"))
    hint: str = field(default="", metadata=declare(omit_default=True, unstored="live only"))
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    type: Literal["flag"] = field(default="flag", metadata=declare(column="kind"))


def test_a_declared_field_is_on_the_wire_under_its_key_after_type_and_seq():
    assert list(wire_form(Flagged("hello", secret="s", hint="h", seq=3)).items()) == [
        ("type", "flag"),
        ("seq", 3),
        ("note", "hello"),
        ("hint", "h"),
    ]


def test_a_field_kept_off_the_wire_is_stored_but_never_sent():
    event = Flagged("hi", secret="admins only", seq=1)
    assert "admins only" not in str(wire_form(event))
    assert row_values(event)["secret"] == "admins only"


def test_a_declared_field_is_stored_in_its_column_cut_to_its_limit_and_read_back():
    event = Flagged("hello world", secret="s", seq=2)
    row = row_values(event)
    assert row == {"kind": "flag", "seq": 2, "note_text": "hello", "secret": "s"}
    assert from_row(Flagged, row.__getitem__) == Flagged("hello", secret="s", seq=2)


def test_the_columns_an_event_is_stored_in_are_its_declared_ones():
    assert columns_of((Flagged,)) == ("kind", "seq", "note_text", "secret")


def test_a_json_form_without_a_required_key_is_refused():
    with pytest.raises(KeyError, match="note"):
        read_wire(Flagged, {"type": "flag"})


def test_an_undeclared_field_is_refused_at_once():
    @dataclass(frozen=True)
    class Careless:
        note: str

    with pytest.raises(TypeError, match="not declared"):
        wire_form(Careless("x"))
