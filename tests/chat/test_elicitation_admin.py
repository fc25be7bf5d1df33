"""The admin lists MCP servers' questions with who answered what, and changes none."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import Elicitation, Message

pytestmark = pytest.mark.django_db


def test_the_admin_lists_questions_with_their_answer_and_who_gave_it(
    admin_client, alice, alice_conversation
):
    answer = Message.objects.create(conversation=alice_conversation, role="assistant")
    row = Elicitation.objects.create(
        answer=answer,
        call_id="call_1",
        server="surveys",
        mode="form",
        message='Who? <img src=x onerror="window.pwned=1">',
        requested_schema={"type": "object", "properties": {"pin": {"type": "string"}}},
        deadline=timezone.now() + timedelta(minutes=2),
        state="accept",
        content={"pin": "sha256:" + "0" * 64},
        answered_by=alice,
        answered_at=timezone.now(),
    )

    listed = admin_client.get("/admin/chat/elicitation/").content.decode()
    assert "surveys" in listed and "alice" in listed and "Accept" in listed
    page = admin_client.get(f"/admin/chat/elicitation/{row.pk}/change/").content.decode()
    assert "sha256:" + "0" * 64 in page
    assert "<img src=x" not in page and "&lt;img src=x" in page
    assert admin_client.get("/admin/chat/elicitation/add/").status_code == 403
    admin_client.post(f"/admin/chat/elicitation/{row.pk}/change/", {"state": "decline"})
    row.refresh_from_db()
    assert row.state == "accept"
