"""Erasing an account: its personal data goes at once, the audit keeps an anonymous
skeleton until the retention period ends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.authtoken.models import Token

from activity.models import ActivityEvent, ActivityFeed
from chat.conversations.services import contact_request_create, deleted_conversations_purge
from chat.models import ContactRequest, Conversation, Message
from chat.turns.admission import admit
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alices_history(alice, alice_conversation, knowledge_base):
    run_turn(alice_conversation, "How do I negotiate my salary? I earn 52,000 at ACME.")
    contact = run_turn(alice_conversation, "I would like to talk to a human advisor")
    contact_request_create(
        message=contact, name="Alice Liddell", email="alice@example.com", body="Call me"
    )
    Token.objects.create(user=alice)
    return alice_conversation


def test_erasing_removes_personal_data_and_keeps_an_anonymous_skeleton(alice, alices_history):
    feeds_before = ActivityFeed.objects.filter(owner=alice).count()
    tools_before = list(
        ActivityEvent.objects.filter(feed__owner=alice, kind="tool_call").values_list("tool")
    )
    call_command("erase_user", "alice", "--yes")

    alice.refresh_from_db()
    assert alice.username == f"erased-{alice.pk}" and not alice.is_active
    assert not alice.has_usable_password() and alice.email == ""
    assert not Token.objects.filter(user=alice).exists()
    assert not ContactRequest.objects.exists()
    assert not Conversation.objects.filter(owner=alice).exists()  # deleted for the owner
    assert set(Message.objects.values_list("content", flat=True)) == {""}
    assert not get_user_model().objects.filter(username="alice").exists()
    # The audit: the same feeds and tool calls, no text of any kind.
    assert ActivityFeed.objects.filter(owner=alice).count() == feeds_before
    assert (
        list(ActivityEvent.objects.filter(feed__owner=alice, kind="tool_call").values_list("tool"))
        == tools_before
    )
    texts = ActivityEvent.objects.filter(feed__owner=alice).values_list(
        "message", "result_summary", "result_content", "error", "arguments"
    )
    assert set(texts) == {("", "", "", "", None)}


def test_the_skeleton_goes_with_the_retention_period(alice, alices_history):
    call_command("erase_user", "alice", "--yes")
    Conversation.all_objects.update(deleted_at=timezone.now() - timedelta(days=31))
    assert deleted_conversations_purge() == 1
    assert not ActivityFeed.objects.exists() and not ActivityEvent.objects.exists()


def test_an_account_with_a_running_answer_is_not_erased(alice, alice_conversation):
    admit(conversation=alice_conversation, text="Still thinking?")
    with pytest.raises(CommandError, match="has an answer running"):
        call_command("erase_user", "alice", "--yes")
    alice.refresh_from_db()
    assert alice.username == "alice"


def test_admins_erase_from_the_user_list_after_reading_what_it_does(client, alice, alices_history):
    root = get_user_model().objects.create_superuser("root", password="root-password")
    client.force_login(root)
    chosen = {"action": "erase_accounts", "_selected_action": [alice.pk]}
    confirm = client.post("/admin/auth/user/", chosen).content.decode()
    assert "Kept for the audit" in confirm and "30 days later" in confirm
    alice.refresh_from_db()
    assert alice.username == "alice"  # nothing happens before the confirmation
    client.post("/admin/auth/user/", {**chosen, "confirmed": "yes"})
    alice.refresh_from_db()
    assert alice.username == f"erased-{alice.pk}"
    # Deleting instead is not offered: an account's feeds are audit data.
    assert client.get(f"/admin/auth/user/{alice.pk}/delete/").status_code == 403
