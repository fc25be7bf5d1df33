"""Auditors label a tool call over REST (`POST /api/feeds/<id>/labels/`), read as strictly
as every other request; nobody else can."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from activity.models import ActivityEvent, ActivityFeed
from chat.models import Conversation
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def call(alice, knowledge_base) -> ActivityEvent:
    answer = run_turn(Conversation.objects.create(owner=alice), "How do I negotiate my salary?")
    return ActivityEvent.objects.get(feed=answer.feed_id, kind="tool_call")


def url(call: ActivityEvent) -> str:
    return f"/api/feeds/{call.feed_id}/labels/"


def labels(call: ActivityEvent) -> list[tuple[str, str]]:
    rows = ActivityEvent.objects.filter(feed=call.feed_id, kind="score").order_by("seq")
    return [(row.result_summary, row.result_content) for row in rows]


def test_an_auditor_labels_a_call_and_gets_the_sealed_score_back(admin_client, call):
    body = {"call_id": call.call_id, "label": "should have asked", "note": "sent at once"}

    posted = admin_client.post(url(call), body, content_type="application/json")

    assert posted.status_code == 201
    score = posted.json()
    assert (score["type"], score["label"], score["note"], score["by"]) == (
        "score",
        "should have asked",
        "sent at once",
        "admin",
    )
    assert labels(call) == [("should have asked", "sent at once")]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"call_id": "c", "label": "unsafe", "stars": 1}, "detail"),
        ({"label": "brilliant"}, "label"),
        ({"label": "unsafe", "note": 3}, "note"),
        ({"label": "unsafe", "note": "n" * 501}, "note"),
    ],
)
def test_a_label_that_cannot_be_read_is_a_400_naming_its_field(admin_client, call, body, field):
    body = {"call_id": call.call_id} | body

    refused = admin_client.post(url(call), body, content_type="application/json")

    assert refused.status_code == 400 and field in refused.json()
    assert labels(call) == []


def test_a_call_the_feed_never_made_is_a_404_naming_it(admin_client, call):
    body = {"call_id": "nope", "label": "unsafe"}

    refused = admin_client.post(url(call), body, content_type="application/json")

    assert refused.status_code == 404 and "call_id" in refused.json()
    assert labels(call) == []


def test_a_feed_still_running_is_a_409(admin_client, call):
    ActivityFeed.objects.filter(pk=call.feed_id).update(state=ActivityFeed.State.RUNNING)
    body = {"call_id": call.call_id, "label": "unsafe"}

    refused = admin_client.post(url(call), body, content_type="application/json")

    assert refused.status_code == 409
    assert labels(call) == []


def test_the_asker_and_staff_without_the_audit_permission_cannot_label(client, alice, call):
    clerk = get_user_model().objects.create_user("clerk", password="x", is_staff=True)
    for user in (alice, clerk):
        client.force_login(user)
        body = {"call_id": call.call_id, "label": "unsafe"}
        assert client.post(url(call), body, content_type="application/json").status_code == 403
    assert labels(call) == []
