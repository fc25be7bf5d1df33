"""An admin's delete is the owner's delete: hidden at once, kept for the audit until the
retention period ends, never removed on the spot with its feeds left pointing at nothing."""

from __future__ import annotations

import pytest

from activity.models import ActivityFeed
from chat.models import Conversation, Message
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def turn(alice_conversation, knowledge_base):
    return run_turn(alice_conversation, "How do I negotiate my salary?")


def assert_retained(conversation, answer):
    kept = Conversation.all_objects.get(pk=conversation.pk)
    assert kept.deleted_at is not None
    assert Message.objects.filter(conversation=kept).count() == 2
    feed = ActivityFeed.objects.get(pk=answer.feed_id)
    assert feed.hidden_from_owner and feed.events.count() == 7
    assert not Conversation.objects.filter(pk=conversation.pk).exists()  # gone for its owner


def test_deleting_a_conversation_in_admin_keeps_it_for_the_retention_period(
    admin_client, alice_conversation, turn
):
    url = f"/admin/chat/conversation/{alice_conversation.pk}/delete/"
    confirm = admin_client.get(url).content.decode()
    assert "removed for good 30 days later" in confirm
    admin_client.post(url, {"post": "yes"})
    assert_retained(alice_conversation, turn)


def test_the_bulk_delete_action_is_the_same_soft_delete(admin_client, alice_conversation, turn):
    admin_client.post(
        "/admin/chat/conversation/",
        {"action": "delete_selected", "_selected_action": [alice_conversation.pk], "post": "yes"},
    )
    assert_retained(alice_conversation, turn)


def test_single_messages_cannot_be_deleted(admin_client, alice_conversation, turn):
    assert admin_client.get(f"/admin/chat/message/{turn.pk}/delete/").status_code == 403
    assert Message.objects.filter(pk=turn.pk).exists()
