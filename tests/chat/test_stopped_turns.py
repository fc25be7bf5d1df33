"""A turn its owner stopped is `stopped`, an end they chose and no failure, wherever it is
read: the REST API and its schema, the downloads, the admin and the conversation list. A turn
whose process died stays `interrupted`, even when a Stop was asked of it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from activity.models import ActivityFeed
from chat import turns
from chat.models import Conversation, Message
from chat.turns import resuming
from chat.turns.admission import admit
from chat.turns.recovery import dead_turns_recover
from tests.support import QUESTION
from tests.support.rows import answer_feed_id
from tests.support.turns import run_turn, stopped_turn

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


@pytest.fixture
def stopped(alice_conversation, knowledge_base, gate) -> Message:
    return stopped_turn(alice_conversation, QUESTION, gate(after=20, request=2))


def test_a_stopped_answer_reads_as_stopped_over_the_api(alice_client, stopped):
    conversation = alice_client.get(f"/api/conversations/{stopped.conversation_id}/").json()
    answer = conversation["messages"][-1]
    assert (answer["id"], answer["state"]) == (stopped.pk, "stopped")
    assert answer["content"] == stopped.content != ""
    feed = answer["feed"]
    assert feed["state"] == "stopped"
    assert feed["summary"] == {"icon": "⏹", "text": "Stopped"}
    last = [e for e in feed["events"] if e["type"] == "status"][-1]
    assert (last["icon"], last["state"]) == ("⏹", "done")
    listed = alice_client.get("/api/feeds/?state=stopped").json()["results"]
    assert [f["id"] for f in listed] == [stopped.feed_id]


def test_the_schema_names_stopped_among_the_ends_of_a_turn(alice_client):
    schema = json.loads(
        alice_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
    )
    components = schema["components"]["schemas"]

    def states(component: str) -> set[str]:
        state = components[component]["properties"]["state"]
        ref = state.get("$ref") or state["allOf"][0]["$ref"]
        return set(components[ref.split("/")[-1]]["enum"])

    ends = {"complete", "failed", "interrupted", "stopped"}
    assert ends <= states("Message") and ends <= states("Feed")
    parameters = schema["paths"]["/api/feeds/"]["get"]["parameters"]
    assert "stopped" in next(p for p in parameters if p["name"] == "state")["schema"]["enum"]


def test_the_downloads_say_the_answer_was_stopped_and_keep_its_text(alice_client, stopped):
    base = f"/c/{stopped.conversation_id}/export"
    markdown = alice_client.get(f"{base}.md").content.decode()
    assert "*This answer was stopped before it was finished.*" in markdown
    assert "interrupted" not in markdown and "failed" not in markdown
    assert "⏹ Stopped" in markdown and "Here is what the knowledge base says:" in markdown
    document = json.loads(alice_client.get(f"{base}.json").content)
    assert document["messages"][-1]["state"] == "stopped"
    assert document["messages"][-1]["content"] == stopped.content


def test_the_conversation_list_flags_no_failure_for_a_stop(alice_client, alice, stopped):
    waiting = run_turn(Conversation.objects.create(owner=alice), EMAIL)
    assert async_to_sync(resuming.stop_waiting)(waiting.pk)
    assert Message.objects.filter(state=Message.State.STOPPED).count() == 2

    listed = alice_client.get("/").content.decode()
    assert listed.count('class="conversation-row"') == 2
    assert "tool failed" not in listed and "Denied" not in listed
    assert "waiting for your approval" not in listed


def test_the_admin_filters_stopped_answers_and_feeds(admin_client, stopped):
    messages = admin_client.get("/admin/chat/message/?state__exact=stopped").content.decode()
    assert f"/admin/chat/message/{stopped.pk}/change/" in messages
    feeds = admin_client.get("/admin/activity/activityfeed/?state__exact=stopped")
    assert feeds.status_code == 200
    assert f"/admin/activity/activityfeed/{stopped.feed_id}/change/" in feeds.content.decode()


def test_a_turn_whose_process_died_stays_interrupted_though_a_stop_was_asked(
    alice_conversation,
):
    """Its owner pressed Stop, but no process ran it any more to stop it: it was the server
    that ended it, as recovery says."""
    answer = admit(conversation=alice_conversation, text=QUESTION).answer
    long_ago = timezone.now() - timedelta(minutes=10)
    ActivityFeed.objects.filter(pk=answer_feed_id(answer)).update(started_at=long_ago)

    async def stop() -> bool:
        return await turns.stop(conversation_id=alice_conversation.pk, answer_id=answer.pk)

    assert async_to_sync(stop)()  # no runner here: asked of the process that ran it, a flag
    assert ActivityFeed.objects.get(pk=answer_feed_id(answer)).stop_requested

    assert dead_turns_recover(conversation_id=alice_conversation.pk) == 1

    answer.refresh_from_db()
    feed = ActivityFeed.objects.get(pk=answer_feed_id(answer))
    assert (answer.state, feed.state, feed.summary_icon) == ("interrupted", "interrupted", "⚠️")


def test_a_cut_answer_closes_its_markdown_and_marks_its_last_step_unfinished(
    alice_client, stopped
):
    """Cut mid-sentence, "**important" reads as bold, not as literal asterisks, and the ✍️
    step it never finished is marked neither done nor failed, for the eye and the ear."""
    Message.objects.filter(pk=stopped.pk).update(
        content="Negotiate with **evidence", state=Message.State.INTERRUPTED
    )
    page = alice_client.get(f"/c/{stopped.conversation_id}/").content.decode()
    answer = page.split(f'id="answer-{stopped.pk}-blocks"')[1].split("</div>")[0]
    assert "<strong>evidence</strong>" in answer and "**" not in answer
    writing = page.split("Writing the answer")[1].split("</li>")[0]
    assert "–" in writing and "not finished" in writing and "✓" not in writing
