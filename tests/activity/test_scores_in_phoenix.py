"""Scores in a real trace backend: with GLASSBOX_PHOENIX_URL set, Arize Phoenix (started for
these tests, as CI runs it) receives each rating and label as an annotation of the span it
judges, live when it is given and from history by `manage.py export_otel`; a changed rating
replaces its annotation, as the latest counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from activity import telemetry
from activity.models import ActivityEvent, ActivityFeed
from activity.telemetry import export
from activity.telemetry import phoenix as phoenix_annotations
from activity.telemetry.ids import span_id, tool_span_id, trace_id
from activity.writing.labels import label_call
from chat.conversations.services import answer_rate
from chat.models import Conversation
from tests.support.phoenix import (
    annotations_received,
    phoenix_or_skip,
    phoenix_server,
    spans_received,
)
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    phoenix_or_skip()
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as url:
        yield url


def spans_of(feed: ActivityFeed) -> tuple[str, str]:
    """The hex ids of the turn's span and of its (one) tool call's span."""
    trace = trace_id(feed.pk, feed.started_at)
    call_id = ActivityEvent.objects.get(feed=feed, kind="tool_call").call_id
    return f"{span_id(trace, 'turn'):016x}", f"{tool_span_id(trace, call_id):016x}"


def test_a_rating_and_a_label_are_annotations_of_their_spans_and_the_latest_counts(
    settings, phoenix, alice, admin_user, knowledge_base
):
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = phoenix
    settings.GLASSBOX_PHOENIX_URL = phoenix
    answer = run_turn(Conversation.objects.create(owner=alice), "How do I negotiate my salary?")
    assert export.processor().force_flush(30_000)
    feed = answer.answer_feed
    spans_received(phoenix, telemetry.trace_id_hex(feed.pk, feed.started_at), 4)
    turn_span, call_span = spans_of(feed)
    call_id = ActivityEvent.objects.get(feed=feed, kind="tool_call").call_id

    answer_rate(user=alice, answer=answer, rating="up")
    answer_rate(user=alice, answer=answer, rating="down", note="not what I asked")
    label_call(user=admin_user, feed_id=feed.pk, call_id=call_id, label="wrong arguments")
    phoenix_annotations.flush()

    on_turn = annotations_received(phoenix, turn_span, 1)
    (rating,) = on_turn
    assert (rating["name"], rating["result"]["label"], rating["result"]["score"]) == (
        "user rating",
        "down",
        0,
    )
    assert (
        rating["annotator_kind"] == "HUMAN" and rating["identifier"] == f"glassbox-user-{alice.pk}"
    )
    assert rating["result"]["explanation"] is None  # the note is content: not captured
    (label,) = annotations_received(phoenix, call_span, 1)
    assert (label["name"], label["result"]["label"]) == ("auditor label", "wrong arguments")


def test_export_otel_sends_a_stored_turns_scores_after_its_spans(
    settings, phoenix, alice, knowledge_base
):
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = ""
    answer = run_turn(Conversation.objects.create(owner=alice), "How do I negotiate my salary?")
    call_id = ActivityEvent.objects.get(feed=answer.feed_id, kind="tool_call").call_id
    answer_rate(user=alice, answer=answer, rating="up", call_id=call_id)
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = phoenix
    settings.GLASSBOX_PHOENIX_URL = phoenix
    feed = answer.answer_feed

    call_command(
        "export_otel",
        "--since",
        (feed.started_at - timedelta(seconds=1)).isoformat(),
        "--until",
        (timezone.now() + timedelta(seconds=1)).isoformat(),
    )

    _, call_span = spans_of(feed)
    (rating,) = annotations_received(phoenix, call_span, 1)
    assert (rating["name"], rating["result"]["label"]) == ("user rating", "up")
