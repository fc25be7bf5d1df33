from __future__ import annotations

import pytest

from activity.models import ActivityEvent
from chat.models import ContactRequest, Conversation, Message
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)

FORM = {"name": "Alice", "email": "alice@example.com", "body": "Please call me."}


@pytest.fixture
def contact_answer(alice_conversation, knowledge_base) -> Message:
    answer = run_turn(alice_conversation, "I want to talk to a human advisor")
    return answer


def url(answer: Message) -> str:
    return f"/c/{answer.conversation_id}/m/{answer.pk}/contact/"


def test_the_agent_opens_a_contact_form_in_the_page(alice_client, contact_answer):
    page = alice_client.get(contact_answer.conversation.get_absolute_url()).content.decode()
    assert f'id="contact-{contact_answer.pk}"' in page
    assert f'hx-post="{url(contact_answer)}"' in page
    assert '📝</span> <span class="text">Opened a contact form' in page


def test_a_sent_form_is_stored_and_recorded_in_the_turns_feed(alice_client, contact_answer):
    response = alice_client.post(url(contact_answer), FORM, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "Your contact request was sent" in response.content.decode()
    request = ContactRequest.objects.get()
    assert (request.name, request.email, request.owner.username) == (
        "Alice",
        "alice@example.com",
        "alice",
    )
    last = ActivityEvent.objects.filter(feed_id=contact_answer.feed_id).order_by("-seq").first()
    assert last is not None
    assert (last.icon, last.message) == ("📨", "Contact request sent")
    page = alice_client.get(contact_answer.conversation.get_absolute_url()).content.decode()
    assert "Your contact request was sent" in page
    assert f'hx-post="{url(contact_answer)}"' not in page


def test_an_invalid_form_shows_its_errors_and_stores_nothing(alice_client, contact_answer):
    bad = {**FORM, "email": "not-an-email", "body": ""}
    response = alice_client.post(url(contact_answer), bad, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Enter a valid email address." in html and "This field is required." in html
    assert 'value="Alice"' in html  # what was typed is kept
    assert ContactRequest.objects.count() == 0


def test_a_form_can_be_sent_only_once(alice_client, contact_answer):
    alice_client.post(url(contact_answer), FORM, headers={"HX-Request": "true"})
    response = alice_client.post(url(contact_answer), FORM, headers={"HX-Request": "true"})
    assert "Your contact request was sent" in response.content.decode()
    assert ContactRequest.objects.count() == 1
    recorded = ActivityEvent.objects.filter(feed_id=contact_answer.feed_id, icon="📨")
    assert recorded.count() == 1


def test_without_javascript_the_form_posts_and_returns_to_the_turn(alice_client, contact_answer):
    response = alice_client.post(url(contact_answer), FORM)
    assert response.status_code == 302
    assert response.url.endswith(f"#m-{contact_answer.pk}")
    assert ContactRequest.objects.count() == 1


def test_no_form_where_the_agent_did_not_open_one(alice_client, alice_conversation):
    answer = run_turn(alice_conversation, "Tell me a joke")
    response = alice_client.post(url(answer), FORM)
    assert response.status_code == 400
    assert ContactRequest.objects.count() == 0


def test_another_users_answer_is_a_404(client, bob, contact_answer):
    client.force_login(bob)
    assert client.post(url(contact_answer), FORM).status_code == 404
    bobs = Conversation.objects.create(owner=bob)
    # Bob's own conversation id with Alice's message id is still not found.
    wrong = f"/c/{bobs.pk}/m/{contact_answer.pk}/contact/"
    assert client.post(wrong, FORM).status_code == 404
    assert ContactRequest.objects.count() == 0
