"""Nothing is left out of the seal by accident: a column added to an event or to a feed
fails here until it is sealed, or said on purpose not to be."""

from __future__ import annotations

from activity.chain import CLOSED_CALL_FIELDS, CLOSED_FEED_FIELDS, SEALED_V2
from activity.models import ActivityEvent, ActivityFeed, ModelCall

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
# cost is sealed).
CALL_NOT_SEALED = {"id", "feed", "cost", "created_at"}


def columns(model) -> set[str]:
    return {field.attname for field in model._meta.concrete_fields}


def test_every_column_of_an_event_is_sealed_but_its_id_and_its_hash():
    assert columns(ActivityEvent) - {"id", "chain"} == set(SEALED_V2)


def test_every_column_of_a_feed_is_in_its_closing_or_left_out_on_purpose():
    assert columns(ActivityFeed) - set(FEED_NOT_SEALED) == set(CLOSED_FEED_FIELDS)


def test_every_column_of_a_model_call_is_in_its_feeds_closing_or_left_out_on_purpose():
    names = {field.name for field in ModelCall._meta.concrete_fields}
    assert names - CALL_NOT_SEALED == set(CLOSED_CALL_FIELDS)
