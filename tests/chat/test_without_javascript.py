"""The page's forms work without JavaScript or a socket: a POST, then the page again; a
refusal keeps the question in the box."""

from __future__ import annotations

import json

import pytest
from django.test import AsyncClient

from chat.models import Conversation, Message, OutboxEmail
from chat.turns.registry import finish_all

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def logged_in(user) -> AsyncClient:
    client = AsyncClient(enforce_csrf_checks=False)
    await client.aforce_login(user)
    return client


async def test_asking_by_post_starts_the_turn_and_shows_the_page(
    alice, alice_conversation, knowledge_base
):
    client = await logged_in(alice)
    url = f"/c/{alice_conversation.pk}/act/"

    response = await client.post(url, {"message": "How do I negotiate my salary?"})
    await finish_all()

    answer = await Message.objects.aget(role="assistant")
    assert response.status_code == 302
    assert response["Location"] == f"/c/{alice_conversation.pk}/#m-{answer.pk}"
    assert answer.state == Message.State.COMPLETE
    page = (await client.get(response["Location"].split("#")[0])).content.decode()
    assert "Salary negotiation" in page
    assert 'http-equiv="refresh"' not in page  # nothing is running any more
    assert (await client.get(url)).status_code == 405  # never a GET that carries a question


async def test_each_refresh_of_an_open_turn_goes_to_a_new_address_keeping_the_answer_in_view(
    alice, alice_conversation
):
    """A refresh to the page's own address with a #fragment is a jump within the page for a
    browser (Chromium reloads nothing): each one names the next address instead."""
    client = await logged_in(alice)
    page_url = f"/c/{alice_conversation.pk}/"
    await client.post(f"{page_url}act/", {"message": "Email advisor@example.com: can we meet?"})
    await finish_all()  # the turn waits for its approval: open, with no task
    answer = await Message.objects.aget(role="assistant")

    for asked, next_count in (("", 1), ("?refresh=1", 2), ("?refresh=41", 42), ("?refresh=x", 1)):
        page = (await client.get(page_url + asked)).content.decode()
        refresh = f'content="3; url={page_url}?refresh={next_count}#m-{answer.pk}"'
        assert f'<noscript><meta http-equiv="refresh" {refresh}></noscript>' in page


async def test_a_refusal_answers_with_the_page_and_keeps_the_question(
    alice, alice_conversation, settings
):
    settings.GLASSBOX_MAX_MESSAGE_CHARS = 10
    client = await logged_in(alice)

    response = await client.post(f"/c/{alice_conversation.pk}/act/", {"message": "far too long"})

    page = response.content.decode()
    assert response.status_code == 400
    assert "That question is 12 characters long; the limit is 10." in page
    assert ">far too long</textarea>" in page
    assert not await Message.objects.aexists()


async def test_stop_approve_and_regenerate_by_post(alice, alice_conversation, bob):
    client = await logged_in(alice)
    url = f"/c/{alice_conversation.pk}/act/"
    await client.post(url, {"message": "Email advisor@example.com: can we meet?"})
    await finish_all()  # the turn's task ends where it waits
    approval = await Message.objects.aget(role="assistant")
    assert approval.state == Message.State.WAITING
    page = (await client.get(f"/c/{alice_conversation.pk}/")).content.decode()
    assert 'http-equiv="refresh"' in page and 'name="approve"' in page
    from chat.models import ToolApproval

    call_id = (await ToolApproval.objects.aget()).call_id
    outsider = await logged_in(bob)
    assert (await outsider.post(url, {"approve": call_id})).status_code == 404
    assert (await client.post(url, {"approve": call_id})).status_code == 302
    await finish_all()
    assert await OutboxEmail.objects.acount() == 1

    # Regenerated, the answer asks again; stopped while it waits, it ends as stopped.
    regenerated = await client.post(url, {"regenerate": str(approval.pk)})
    assert regenerated.status_code == 302
    await finish_all()
    again = await Message.objects.aget(replaces=approval)
    assert again.state == Message.State.WAITING
    assert (await client.post(url, {"stop": str(again.pk)})).status_code == 302
    await again.arefresh_from_db()
    assert again.state == Message.State.STOPPED
    refused = await client.post(url, {"stop": str(again.pk)})
    assert refused.status_code == 409 and "That answer is not running any more." in (
        refused.content.decode()
    )


@pytest.mark.parametrize(
    ("fields", "refusal"),
    [
        ({"stop": "²"}, "Stop needs the id of the answer to stop."),
        ({"regenerate": "1_000"}, "Regenerate needs the id of the answer."),
        ({"approve": "c1", "deny": "c1"}, "Approve or deny, not both."),
        ({"message": "Hi", "client_id": "not-a-uuid"}, "client_id must be a UUID."),
        ({"message": "Hi", "admin": "1"}, "Unknown field: admin."),
    ],
)
async def test_a_form_and_a_socket_message_with_the_same_fields_get_the_same_refusal(
    alice, alice_conversation, fields, refusal
):
    from tests.support.sockets import open_socket

    client = await logged_in(alice)
    response = await client.post(f"/c/{alice_conversation.pk}/act/", fields)
    assert response.status_code == 400 and refusal in response.content.decode()

    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps(fields))
    said = json.loads(await socket.receive_from(5))
    await socket.disconnect()
    assert said == {"type": "error", "message": refusal}
    assert not await Message.objects.aexists()  # nothing started either way


async def test_a_first_question_makes_the_conversation_and_runs_on_its_page(alice, knowledge_base):
    client = await logged_in(alice)

    response = await client.post("/c/new/", {"message": "How do I negotiate my salary?"})
    await finish_all()

    conversation = await Conversation.objects.aget(owner=alice)
    assert response.status_code == 302
    assert response["Location"] == f"/c/{conversation.pk}/"
    answer = await Message.objects.aget(role="assistant", conversation=conversation)
    assert answer.state == Message.State.COMPLETE
    page = (await client.get(response["Location"])).content.decode()
    assert "Salary negotiation" in page
    assert 'class="starter"' not in page  # a conversation with turns invites no more
