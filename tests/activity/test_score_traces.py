"""Scores in the traces: a rating of the answer is an event of the turn's span, a rating or
a label of a tool call an event of that call's span, when a stored turn is exported
(`manage.py export_otel` reads the same plan); the note goes only with content capture, and
who scored never does."""

from __future__ import annotations

import pytest

from activity.models import ActivityEvent, ActivityFeed
from activity.telemetry.spans import Options, TracePlan, trace_plan
from activity.writing.labels import label_call
from chat.conversations.services import answer_rate
from chat.models import Conversation
from tests.support.rows import answer_feed_id
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def plan_of(feed_id: int, *, content: bool = False) -> TracePlan:
    feed = ActivityFeed.objects.get(pk=feed_id)
    return trace_plan(feed, feed.model_calls.all(), feed.events.all(), Options(content=content))


@pytest.fixture
def scored(alice, admin_user, knowledge_base):
    answer = run_turn(Conversation.objects.create(owner=alice), "How do I negotiate my salary?")
    call_id = ActivityEvent.objects.get(feed=answer.feed_id, kind="tool_call").call_id
    answer_rate(user=alice, answer=answer, rating="down", note="alice's own words")
    answer_rate(user=alice, answer=answer, rating="up", call_id=call_id)
    label_call(user=admin_user, feed_id=answer_feed_id(answer), call_id=call_id, label="unsafe")
    return answer


def score_events(plan: TracePlan, span_name: str) -> list[dict]:
    span = next(span for span in plan.spans if span.name == span_name)
    return [dict(e.attributes) for e in span.events if e.name == "glassbox.score"]


def test_each_score_is_an_event_of_the_span_it_judges(scored):
    plan = plan_of(scored.feed_id)

    assert score_events(plan, "invoke_agent glassbox") == [
        {"glassbox.score.target": "answer", "glassbox.score.value": "down"}
    ]
    call_id = ActivityEvent.objects.get(feed=scored.feed_id, kind="tool_call").call_id
    assert score_events(plan, "execute_tool search_documents") == [
        {"glassbox.score.target": call_id, "glassbox.score.value": "up"},
        {"glassbox.score.target": call_id, "glassbox.score.label": "unsafe"},
    ]


def test_the_note_goes_only_with_content_capture_and_the_scorer_never(scored):
    plain = plan_of(scored.feed_id)
    captured = plan_of(scored.feed_id, content=True)

    said = [str(v) for span in plain.spans for e in span.events for v in e.attributes.values()]
    assert "alice's own words" not in said and "alice" not in said and "admin" not in said
    (answer,) = score_events(captured, "invoke_agent glassbox")
    assert answer["glassbox.score.note"] == "alice's own words"
