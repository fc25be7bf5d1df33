from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import AsyncClient
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed
from chat.models import Conversation
from tests.support.responses import streamed
from tests.support.rows import answer_feed_id
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def ask(user, question):
    answer = run_turn(Conversation.objects.create(owner=user), question)
    return ActivityFeed.objects.get(pk=answer_feed_id(answer))


@pytest.fixture
def searched_feed(alice, knowledge_base):
    return ask(alice, "How do I negotiate my salary?")


@pytest.fixture
def failed_feed(bob, knowledge_base):
    return ask(bob, "Simulate a failure while looking up salaries")


def test_a_feed_page_shows_its_events_arguments_results_and_links(admin_client, searched_feed):
    page = admin_client.get(f"/admin/activity/activityfeed/{searched_feed.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "negotiate salary" in html and "3 documents" in html
    assert html.index("Found 3 documents") < html.index("Writing the answer")
    assert f"/admin/chat/conversation/{searched_feed.conversation_id}/change/" in html
    assert f"/admin/chat/message/{searched_feed.message.pk}/change/" in html


def test_which_tool_calls_failed_for_whom_and_why(admin_client, searched_feed, failed_feed):
    page = admin_client.get("/admin/activity/toolcallrecord/?ok__exact=0").content.decode()
    assert "bob" in page and "missing argument &#x27;query&#x27;" in page
    assert "alice" not in page.split("<tbody>")[1]
    everything = admin_client.get("/admin/activity/toolcallrecord/").content.decode()
    assert "alice" in everything and "negotiate salary" in everything


def test_tool_calls_filter_by_tool_and_duration(admin_client, searched_feed):
    fast = admin_client.get("/admin/activity/toolcallrecord/?tool=search_documents&took=fast")
    assert f">feed {searched_feed.pk}</a>" in fast.content.decode()
    slow = admin_client.get("/admin/activity/toolcallrecord/?took=very_slow").content.decode()
    assert f">feed {searched_feed.pk}</a>" not in slow  # no call took 5 s or more


def test_feeds_filter_by_state_tool_and_user_and_search_events(
    admin_client, searched_feed, failed_feed, alice
):
    def listed(query):
        html = admin_client.get(f"/admin/activity/activityfeed/?{query}").content.decode()
        return {feed.pk for feed in (searched_feed, failed_feed)
                if f'/admin/activity/activityfeed/{feed.pk}/change/' in html}  # fmt: skip

    assert listed("tool=search_documents") == {searched_feed.pk, failed_feed.pk}
    assert listed(f"owner__id__exact={alice.pk}") == {searched_feed.pk}
    assert listed("q=Found+3+documents") == {searched_feed.pk}
    assert listed("state__exact=complete") == {searched_feed.pk, failed_feed.pk}
    assert listed("q=bob") == {failed_feed.pk}


def test_audit_data_cannot_be_added_changed_or_deleted(admin_client, searched_feed):
    event = ActivityEvent.objects.filter(feed=searched_feed).first()
    assert event is not None
    assert admin_client.get("/admin/activity/activityfeed/add/").status_code == 403
    delete = f"/admin/activity/activityfeed/{searched_feed.pk}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    admin_client.post(f"/admin/activity/toolcallrecord/{event.pk}/change/", {"tool": "x"})
    event.refresh_from_db()
    assert event.tool != "x"
    assert ActivityFeed.objects.filter(pk=searched_feed.pk).exists()


def test_events_are_append_only_in_code_too(searched_feed):
    event = ActivityEvent.objects.filter(feed=searched_feed).first()
    assert event is not None
    event.message = "rewritten history"
    with pytest.raises(ValueError, match="append-only"):
        event.save()


@pytest.mark.asyncio
async def test_the_export_action_streams_ndjson_and_csv_a_chunk_of_feeds_at_a_time(
    searched_feed, failed_feed, monkeypatch
):
    monkeypatch.setattr("activity.auditing.export.CHUNK", 1)
    admin = await get_user_model().objects.acreate(username="root", is_staff=True)
    admin.is_superuser = True
    await admin.asave()
    client = AsyncClient()
    await client.aforce_login(admin)
    base = {"_selected_action": [searched_feed.pk, failed_feed.pk]}

    response = await client.post(
        "/admin/activity/activityfeed/", {**base, "action": "export_ndjson"}
    )
    parts = await streamed(response)
    # One feed per part, as it is read: the selection is never gathered in memory first.
    assert len(parts) == 2
    assert {json.loads(part)["id"] for part in parts} == {searched_feed.pk, failed_feed.pk}
    response = await client.post("/admin/activity/activityfeed/", {**base, "action": "export_csv"})
    text = b"".join(await streamed(response)).decode()
    assert {row["user"] for row in csv.DictReader(io.StringIO(text))} == {"alice", "bob"}


def test_the_dashboard_draws_calls_per_day_and_per_tool_figures(
    admin_client, searched_feed, failed_feed
):
    page = admin_client.get("/admin/activity/activityfeed/dashboard/").content.decode()
    assert "<svg" in page and "2 calls, 1 failed" in page
    row = page.split("<td>search_documents</td>")[1].split("</tr>")[0]
    assert "<td>2</td>" in row and "50 %" in row
    assert "<script" not in page.split('id="content"')[1]


def test_admin_lists_stay_within_a_bounded_number_of_queries_for_100_feeds(
    admin_client, alice, django_assert_max_num_queries
):
    now = timezone.now()
    feeds = ActivityFeed.objects.bulk_create(
        ActivityFeed(owner=alice, state="complete", finished_at=now + timedelta(seconds=1))
        for _ in range(100)
    )
    ActivityEvent.objects.bulk_create(
        ActivityEvent(feed=feed, seq=1, kind="tool_result", tool="search_documents", ok=True,
                      call_id="c1", duration_ms=10)
        for feed in feeds
    )  # fmt: skip
    for url in ["/admin/activity/activityfeed/", "/admin/activity/toolcallrecord/"]:
        with django_assert_max_num_queries(15):
            assert admin_client.get(url).status_code == 200


def test_the_feed_list_shows_each_feed_once_and_reads_distinct_rows_only_for_a_search(
    admin_client, searched_feed
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert admin_client.get("/admin/activity/activityfeed/").status_code == 200
    # A distinct set of every feed is counted and dated by reading all of them.
    assert not [q for q in captured if 'DISTINCT "activity_activityfeed"."id"' in q["sql"]]
    # Its events hold "search_documents" several times: the feed is listed once.
    page = admin_client.get("/admin/activity/activityfeed/?q=search_documents").content.decode()
    assert page.count(f"/admin/activity/activityfeed/{searched_feed.pk}/change/") == 1


def test_a_feed_page_says_what_each_event_is_and_which_rows_no_longer_read(
    admin_client, searched_feed
):
    from tests.support.audit import sql

    status = searched_feed.events.filter(kind="status").first()
    sql("UPDATE activity_activityevent SET state = 'hacked' WHERE id = %s", status.pk)

    html = admin_client.get(f"/admin/activity/activityfeed/{searched_feed.pk}/change/")
    html = html.content.decode()

    assert "call search_documents" in html and "ok: 3 documents" in html
    assert "✅ Done (done)" in html
    assert "unreadable: see its chain" in html
