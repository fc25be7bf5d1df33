"""What the app writes itself (messages, what it sent and was sent) is read in the admin,
never added or edited there, even by a superuser."""

from __future__ import annotations

import pytest

from chat.models import ContactRequest, Message, OutboxEmail

pytestmark = pytest.mark.django_db


def _message(alice, conversation):
    question = Message.objects.create(conversation=conversation, role="user", content="Hi")
    return Message.objects.create(
        conversation=conversation, role="assistant", content="Hello", replaces=question
    )


def _outbox_email(alice, conversation):
    return OutboxEmail.objects.create(owner=alice, to="a@example.com", subject="s", body="b")


def _contact_request(alice, conversation):
    message = Message.objects.create(conversation=conversation, role="assistant")
    return ContactRequest.objects.create(
        owner=alice, message=message, name="Alice", email="a@example.com", body="b"
    )


RECORDS = {"message": _message, "outboxemail": _outbox_email, "contactrequest": _contact_request}


@pytest.mark.parametrize("model", RECORDS)
def test_a_record_the_app_wrote_is_shown_and_never_added_or_edited_in_the_admin(
    admin_client, alice, alice_conversation, model
):
    row = RECORDS[model](alice, alice_conversation)
    before = {f.attname: getattr(row, f.attname) for f in type(row)._meta.concrete_fields}
    url = f"/admin/chat/{model}/{row.pk}/change/"

    page = admin_client.get(url).content.decode()
    edited = admin_client.post(url, {"content": "x", "body": "x", "replaces": "", "to": "x"})

    assert 'name="_save"' not in page and "<textarea" not in page
    assert edited.status_code == 403
    assert admin_client.get(f"/admin/chat/{model}/add/").status_code == 403
    row.refresh_from_db()
    assert {f.attname: getattr(row, f.attname) for f in type(row)._meta.concrete_fields} == before
