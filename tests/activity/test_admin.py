from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from activity.models import ActivityEvent, ActivityFeed
from chat.models import Conversation
from chat.services import turn_start
from chat.turns import turn_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(client):
    admin = get_user_model().objects.create_superuser("root", password="root-password")
    client.force_login(admin)
    return client


@pytest.fixture
def searched_feed(alice, knowledge_base):
    conversation = Conversation.objects.create(owner=alice)
    turn = turn_start(conversation=conversation, text="How do I negotiate my salary?")
    async_to_sync(turn_run)(answer=turn.answer)
    return ActivityFeed.objects.get()


def test_admins_see_a_feed_with_its_tool_call_arguments_and_results(admin_client, searched_feed):
    page = admin_client.get(f"/admin/activity/activityfeed/{searched_feed.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "negotiate salary" in html
    assert "3 documents" in html
    assert html.index("Found 3 documents") < html.index("Writing the answer")


def test_feeds_and_events_cannot_be_added_changed_or_deleted(admin_client, searched_feed):
    event = ActivityEvent.objects.filter(feed=searched_feed).first()
    assert admin_client.get("/admin/activity/activityfeed/add/").status_code == 403
    assert admin_client.get("/admin/activity/activityevent/add/").status_code == 403
    delete = f"/admin/activity/activityfeed/{searched_feed.pk}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    admin_client.post(f"/admin/activity/activityevent/{event.pk}/change/", {"message": "x"})
    event.refresh_from_db()
    assert event.message != "x"


def test_events_are_append_only_in_code_too(searched_feed):
    event = ActivityEvent.objects.filter(feed=searched_feed).first()
    event.message = "rewritten history"
    with pytest.raises(ValueError, match="append-only"):
        event.save()


def test_the_feed_list_does_not_grow_queries_with_feeds(
    admin_client, searched_feed, django_assert_max_num_queries
):
    with django_assert_max_num_queries(12):
        assert admin_client.get("/admin/activity/activityfeed/").status_code == 200
