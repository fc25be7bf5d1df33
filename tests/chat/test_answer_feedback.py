"""Rating an answer or one of its tool calls over REST: the asker's 👍/👎 and note are
appended to the answer's sealed feed as `score` events, the latest rating counts, and every
request that is not one a program may make is refused with nothing recorded."""

from __future__ import annotations

import pytest

from activity.models import ActivityEvent
from activity.recording.events import Score, ToolCall
from activity.selectors import current_ratings
from chat.models import Message
from tests.support import QUESTION
from tests.support.api import logged_in
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def answer(alice_conversation, knowledge_base) -> Message:
    return run_turn(alice_conversation, QUESTION)


def url(answer: Message) -> str:
    return f"/api/conversations/{answer.conversation_id}/messages/{answer.pk}/feedback/"


def scores(answer: Message) -> list[Score]:
    rows = ActivityEvent.objects.filter(feed_id=answer.feed_id, kind="score").order_by("seq")
    return [event for row in rows if isinstance(event := row.to_event(), Score)]


def call_of(answer: Message) -> ToolCall:
    rows = ActivityEvent.objects.filter(feed_id=answer.feed_id, kind="tool_call")
    call = rows.first()
    assert call is not None, "the demo model searches before it answers"
    event = call.to_event()
    assert isinstance(event, ToolCall)
    return event


def test_the_asker_rates_the_answer_and_the_rating_is_sealed_in_its_feed(client, alice, answer):
    posted = logged_in(client, alice).post(
        url(answer), {"rating": "down", "note": "too vague"}, content_type="application/json"
    )

    assert posted.status_code == 201
    body = posted.json()
    assert (body["type"], body["call_id"], body["value"], body["note"], body["by"]) == (
        "score",
        "",
        "down",
        "too vague",
        "alice",
    )
    assert body["at"] and body["seq"] > 1  # after the turn's own lines
    (score,) = scores(answer)
    assert (score.value, score.note, score.by_id, score.seq) == (
        "down",
        "too vague",
        alice.pk,
        body["seq"],
    )


def test_a_tool_call_is_rated_by_its_call_id_and_a_new_rating_counts_instead(
    client, alice, answer
):
    call = call_of(answer)
    api = logged_in(client, alice)
    for rating in ("up", "down", "up"):
        posted = api.post(
            url(answer),
            {"rating": rating, "call_id": call.call_id},
            content_type="application/json",
        )
        assert posted.status_code == 201
        assert posted.json()["tool"] == call.tool

    recorded = scores(answer)
    assert [score.value for score in recorded] == ["up", "down", "up"]
    current = current_ratings(recorded, by_id=alice.pk)
    assert set(current) == {call.call_id} and current[call.call_id].value == "up"
    assert current[call.call_id].seq == recorded[-1].seq


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rating": "meh"}, "rating"),
        ({}, "rating"),
        ({"rating": True}, "rating"),
        ({"rating": "up", "note": 5}, "note"),
        ({"rating": "up", "note": None}, "note"),
        ({"rating": "up", "note": "x" * 501}, "note"),
        ({"rating": "up", "note": "nul\x00"}, "note"),
        ({"rating": "up", "call_id": ["a"]}, "call_id"),
        ({"rating": "up", "call_id": "c" * 65}, "call_id"),
    ],
)
def test_a_request_that_cannot_be_read_is_a_400_naming_its_field_and_records_nothing(
    client, alice, answer, body, field
):
    refused = logged_in(client, alice).post(url(answer), body, content_type="application/json")

    assert refused.status_code == 400
    assert field in refused.json()
    assert scores(answer) == []


def test_a_call_the_answer_never_made_is_a_404_naming_the_field_and_records_nothing(
    client, alice, answer
):
    body = {"rating": "up", "call_id": "call_that_never_ran"}
    refused = logged_in(client, alice).post(url(answer), body, content_type="application/json")

    # As for any target that is not there: the request itself was well formed.
    assert refused.status_code == 404
    assert refused.json() == {"call_id": ["That answer made no tool call with this id."]}
    assert scores(answer) == []


def test_an_unknown_field_or_a_body_that_is_not_an_object_is_a_400(client, alice, answer):
    api = logged_in(client, alice)
    unknown = api.post(url(answer), {"rating": "up", "stars": 5}, content_type="application/json")
    listed = api.post(url(answer), ["up"], content_type="application/json")
    not_json = api.post(url(answer), "up", content_type="application/json")

    assert unknown.status_code == 400 and "stars" in unknown.json()["detail"]
    assert listed.status_code == 400 and not_json.status_code == 400
    assert scores(answer) == []


def test_another_users_answer_is_a_404_and_a_question_is_no_answer(client, alice, bob, answer):
    other = logged_in(client, bob).post(
        url(answer), {"rating": "up"}, content_type="application/json"
    )
    question = Message.objects.get(conversation=answer.conversation, role=Message.Role.USER)
    own_question = logged_in(client, alice).post(
        url(answer).replace(f"/{answer.pk}/", f"/{question.pk}/"),
        {"rating": "up"},
        content_type="application/json",
    )

    assert other.status_code == 404 and own_question.status_code == 404
    assert scores(answer) == []


def test_a_running_answer_cannot_be_rated_yet(client, alice, alice_conversation):
    running = Message.objects.create(
        conversation=alice_conversation, role=Message.Role.ASSISTANT, state="streaming"
    )

    refused = logged_in(client, alice).post(
        url(running), {"rating": "up"}, content_type="application/json"
    )

    assert refused.status_code == 409


def test_the_schema_documents_the_feedback_endpoint(client, alice):
    schema = logged_in(client, alice).get("/api/schema/", headers={"Accept": "application/json"})

    path = "/api/conversations/{conversation_id}/messages/{message_id}/feedback/"
    assert schema.status_code == 200
    text = schema.content.decode()
    assert path in text and "FeedbackRequest" in text and "Score" in text


def test_an_anonymous_request_is_refused(client, answer):
    refused = client.post(url(answer), {"rating": "up"}, content_type="application/json")

    assert refused.status_code in (401, 403)
    assert scores(answer) == []
