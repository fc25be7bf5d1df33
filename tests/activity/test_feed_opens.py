"""Seed 002's next step: how often people expand a folded feed. The page reports an
expansion with one small write that keeps a count and a time, nothing personal; the admin
dashboard shows the share of feeds opened per day and per tool."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from activity.models import ActivityFeed
from chat.models import Conversation, Message
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def searched(alice_conversation, knowledge_base) -> Message:
    return run_turn(alice_conversation, "How do I negotiate my salary?")


def opened(feed_id: int) -> ActivityFeed:
    return ActivityFeed.objects.get(pk=feed_id)


def test_the_page_offers_each_folded_feed_with_steps_a_place_to_say_it_was_opened(
    alice_client, alice_conversation, searched
):
    run_turn(alice_conversation, "Tell me a joke")  # no steps: nothing to open
    page = alice_client.get(alice_conversation.get_absolute_url()).content.decode()
    assert re.findall(r'data-count="([^"]+)"', page) == [f"/feeds/{searched.feed_id}/expanded/"]


def test_expanding_a_feed_is_counted_with_one_write_and_keeps_its_first_time(
    alice_client, searched
):
    url = f"/feeds/{searched.feed_id}/expanded/"
    with CaptureQueriesContext(connection) as queries:
        assert alice_client.post(url).status_code == 204
    writes = [q["sql"] for q in queries if not q["sql"].lstrip().upper().startswith("SELECT")]
    feed_writes = [sql for sql in writes if "activity_activityfeed" in sql]
    assert len(feed_writes) == 1 and feed_writes[0].upper().startswith("UPDATE")
    first = opened(searched.feed_id)
    assert first.opened_count == 1 and first.first_opened_at is not None

    assert alice_client.post(url).status_code == 204
    again = opened(searched.feed_id)
    assert again.opened_count == 2 and again.first_opened_at == first.first_opened_at


def test_only_the_owner_counts_and_only_a_finished_feed(
    client, alice_client, bob, alice_conversation, searched
):
    url = f"/feeds/{searched.feed_id}/expanded/"
    client.force_login(bob)
    assert client.post(url).status_code == 404
    assert alice_client.get(url).status_code == 405
    assert alice_client.post("/feeds/999999/expanded/").status_code == 404
    running = ActivityFeed.objects.create(owner=searched.feed.owner, state="running")
    assert alice_client.post(f"/feeds/{running.pk}/expanded/").status_code == 404
    assert Client().post(url).status_code == 302  # to the login page
    assert opened(searched.feed_id).opened_count == 0
    assert opened(running.pk).opened_count == 0


def test_the_dashboard_shows_the_share_of_feeds_opened_per_day_and_per_tool(
    admin_client, alice, alice_client, knowledge_base
):
    feeds = []
    for question in ("How do I negotiate my salary?", "What is 52,000 * 1.07 / 12?"):
        for _ in range(2):
            conversation = Conversation.objects.create(owner=alice)
            feeds.append(run_turn(conversation, question).feed_id)
    alice_client.post(f"/feeds/{feeds[0]}/expanded/")  # one of the two searches
    alice_client.post(f"/feeds/{feeds[2]}/expanded/")  # and both calculations
    alice_client.post(f"/feeds/{feeds[3]}/expanded/")

    page = admin_client.get("/admin/activity/activityfeed/dashboard/").content.decode()
    per_tool = page.split('class="opened-per-tool"')[1].split("</table>")[0]
    assert "<td>search_documents</td><td>2</td><td>1</td><td>50 %</td>" in per_tool
    assert "<td>calculator</td><td>2</td><td>2</td><td>100 %</td>" in per_tool
    per_day = page.split('class="opened-per-day"')[1].split("</table>")[0]
    today = timezone.now().date().isoformat()
    assert f"<td>{today}</td><td>4</td><td>3</td><td>75 %</td>" in per_day
