"""The page's 👍/👎: under a finished answer and on its tool call's line, a form that works
with htmx (the form comes back pressed) and without JavaScript (the page comes back at the
answer), read as the API reads a rating."""

from __future__ import annotations

import re

import pytest

from activity.models import ActivityEvent
from chat.models import Message
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def answer(alice_conversation, knowledge_base) -> Message:
    return run_turn(alice_conversation, "How do I negotiate my salary?")


def feedback_url(answer: Message) -> str:
    return f"/c/{answer.conversation_id}/m/{answer.pk}/feedback/"


def call_id_of(answer: Message) -> str:
    return ActivityEvent.objects.get(feed=answer.feed_id, kind="tool_call").call_id


def pressed(html: str, target: str = "") -> dict[str, str]:
    """Each thumb's aria-pressed in the rating form of `target` ("" the answer)."""
    forms = re.findall(r'<form class="rating[^"]*".*?</form>', html, re.DOTALL)
    for form in forms:
        named = re.search(r'name="call_id" value="([^"]*)"', form)
        if (named.group(1) if named else "") == target:
            return dict(re.findall(r'value="(up|down)" aria-pressed="(true|false)"', form))
    raise AssertionError(f"no rating form for {target!r}")


def test_a_finished_answer_and_its_tool_call_each_have_a_rating_form(alice_client, answer):
    page = alice_client.get(f"/c/{answer.conversation_id}/").content.decode()

    assert pressed(page) == {"up": "false", "down": "false"}
    assert pressed(page, call_id_of(answer)) == {"up": "false", "down": "false"}
    assert page.count('<form class="rating') == 2


def test_without_javascript_a_rating_brings_the_page_back_at_the_answer_pressed(
    alice_client, answer
):
    call_id = call_id_of(answer)
    posted = alice_client.post(
        feedback_url(answer), {"rating": "down", "call_id": call_id, "note": "wrong search"}
    )

    assert posted.status_code == 302 and posted["Location"].endswith(f"#m-{answer.pk}")
    page = alice_client.get(posted["Location"]).content.decode()
    assert pressed(page, call_id) == {"up": "false", "down": "true"}
    assert pressed(page) == {"up": "false", "down": "false"}
    assert "wrong search</textarea>" in page

    alice_client.post(feedback_url(answer), {"rating": "up", "call_id": call_id, "note": ""})
    page = alice_client.get(posted["Location"]).content.decode()
    assert pressed(page, call_id) == {"up": "true", "down": "false"}


def test_with_htmx_the_form_comes_back_pressed_and_says_it_was_saved(alice_client, answer):
    posted = alice_client.post(
        feedback_url(answer), {"rating": "up", "note": ""}, headers={"HX-Request": "true"}
    )

    html = posted.content.decode()
    assert posted.status_code == 200 and html.lstrip().startswith("<form")
    assert pressed(html) == {"up": "true", "down": "false"}
    assert 'role="status"' in html


def test_a_rating_that_cannot_be_read_says_why_and_records_nothing(alice_client, answer):
    too_long = alice_client.post(
        feedback_url(answer), {"rating": "up", "note": "x" * 501}, headers={"HX-Request": "true"}
    )
    unknown_call = alice_client.post(feedback_url(answer), {"rating": "up", "call_id": "nope"})

    assert 'role="alert"' in too_long.content.decode()
    assert "at most 500 characters" in too_long.content.decode()
    assert unknown_call.status_code == 302
    page = alice_client.get(unknown_call["Location"]).content.decode()
    assert "That answer made no tool call with this id." in page
    assert not ActivityEvent.objects.filter(feed=answer.feed_id, kind="score").exists()


def test_another_users_answer_is_not_found(client, bob, answer):
    client.force_login(bob)

    assert client.post(feedback_url(answer), {"rating": "up"}).status_code == 404
    assert not ActivityEvent.objects.filter(feed=answer.feed_id, kind="score").exists()


def test_switched_off_site_wide_the_buttons_go_and_a_rating_is_refused(
    settings, alice_client, answer
):
    settings.GLASSBOX_RATINGS = False

    page = alice_client.get(f"/c/{answer.conversation_id}/").content.decode()
    api = alice_client.post(
        f"/api/conversations/{answer.conversation_id}/messages/{answer.pk}/feedback/",
        {"rating": "up"},
        content_type="application/json",
    )

    assert '<form class="rating' not in page
    assert api.status_code == 403 and "switched off" in api.json()["detail"]
    assert not ActivityEvent.objects.filter(feed=answer.feed_id, kind="score").exists()


def test_a_person_who_turns_the_buttons_off_in_preferences_sees_none(alice_client, answer):
    # The page's form as sent with the box unticked (an unticked box sends nothing).
    form = {"mode": "partial", "label_kind": "auto", "labels": "", "show_after": "5"}
    form |= {"max_lines": "6", "detail": "explain", "tool_progress": "on", "line_width": "80"}
    saved = alice_client.post("/preferences/", form)
    assert saved.status_code == 302

    page = alice_client.get(f"/c/{answer.conversation_id}/").content.decode()

    assert '<form class="rating' not in page
