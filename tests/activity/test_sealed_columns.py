"""Nothing is left out of the seal by accident: a column added to an event or to a feed
fails here until it is sealed, or said on purpose not to be. An event's columns are sealed
as activity.recording.events declares them, so a field declared with a column is sealed with
no other edit, and the hashes of the events stored before it stay as they were."""

from __future__ import annotations

from typing import cast

import pytest

from activity.models import ActivityEvent, ActivityFeed, ModelCall
from activity.recording import chain
from activity.recording.chain import (
    ADDED_SINCE_V2,
    ALL_SEALED,
    CLOSED_CALL_FIELDS,
    CLOSED_FEED_FIELDS,
    DECLARED,
    GENESIS,
    SEAL_V1,
    SEAL_V2,
    UNSEALED,
    link,
)
from activity.recording.declared import fields_of
from activity.recording.events import RECORDED_TYPES
from tests.support.stored_format import AT, RECORDED

# A feed's columns its closing leaves out, and why: they change after it ends (its owner
# opens it, deletes the conversation) or only matter while it runs, or are the closing.
FEED_NOT_SEALED = {
    "opened_count": "its owner opens it later",
    "first_opened_at": "its owner opens it later",
    "hidden_from_owner": "its conversation is deleted later",
    "heartbeat_at": "only while it runs",
    "stop_requested": "only while it runs",
    "seq_reserved": "only while it runs",
    "closing": "the seal itself",
}
# A model call's columns the closing leaves out: the recorder of a resumed turn knows the
# calls made before its pause by what they did, not by their cost or time (the feed's total
# cost is sealed); nor a failed request's kind, kept for traces (why, not what happened).
CALL_NOT_SEALED = {"id", "feed", "cost", "created_at", "error_type", "tools_offered"}


def columns(model) -> set[str]:
    return {field.attname for field in model._meta.concrete_fields}


def test_every_column_of_an_event_is_sealed_or_said_not_to_be():
    assert columns(ActivityEvent) == set(ALL_SEALED) | set(UNSEALED)
    assert not set(ALL_SEALED) & set(UNSEALED)


def test_what_is_sealed_is_what_the_events_declare_they_are_stored_in():
    assert set(ALL_SEALED) == set(DECLARED)
    assert len(ALL_SEALED) == len(set(ALL_SEALED))


def test_every_field_of_a_recorded_event_names_its_column_or_says_why_it_has_none():
    for cls in RECORDED_TYPES.values():
        # As a class (mypy reads an event class's unhashable instances as the class's own).
        for field in fields_of(cast(type, cls)):
            assert field.declared.column or field.declared.unstored, (cls, field.name)


def test_a_column_added_since_the_seal_was_fixed_is_nullable_so_older_rows_keep_their_hashes():
    for name in ADDED_SINCE_V2:
        assert ActivityEvent._meta.get_field(name).null, name


@pytest.mark.parametrize("version", [SEAL_V1, SEAL_V2])
def test_a_column_added_later_is_sealed_when_set_and_leaves_stored_hashes_alone(
    monkeypatch, version
):
    row = ActivityEvent.from_event(ActivityFeed(pk=7), RECORDED[0])
    row.created_at, row.seal_version = AT, version
    before = link(GENESIS, row.sealed_values())
    monkeypatch.setattr(chain, "ADDED_SINCE_V2", (*ADDED_SINCE_V2, "reviewed_by"))
    monkeypatch.setattr(chain, "SEALED_WHEN_SET", (*chain.SEALED_WHEN_SET, "reviewed_by"))
    unset = row.sealed_values() | {"reviewed_by": None}
    assert link(GENESIS, unset) == before
    assert link(GENESIS, unset | {"reviewed_by": "bob"}) != before


def test_every_column_of_a_feed_is_in_its_closing_or_left_out_on_purpose():
    assert columns(ActivityFeed) - set(FEED_NOT_SEALED) == set(CLOSED_FEED_FIELDS)


def test_every_column_of_a_model_call_is_in_its_feeds_closing_or_left_out_on_purpose():
    names = {field.name for field in ModelCall._meta.concrete_fields}
    assert names - CALL_NOT_SEALED == set(CLOSED_CALL_FIELDS)
