"""Which language a page speaks, the switcher, and the locale of times and durations."""

from __future__ import annotations

import re

import pytest
from django.utils import translation

from activity.models import FeedPreferences
from activity.presenting.presentation import seconds
from chat.models import Conversation
from chat.turns.admission import admit

pytestmark = pytest.mark.django_db

ITALIAN_MONTHS = (
    "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre"
)


def test_a_page_follows_the_browsers_language(alice_client):
    page = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="it-IT,it;q=0.9,en;q=0.5")
    assert page["Content-Language"] == "it"
    html = page.content.decode()
    assert '<html lang="it">' in html
    assert "Le tue conversazioni" in html and "Nuova conversazione" in html
    assert "Your conversations" not in html


def test_the_login_page_speaks_the_browsers_language_before_anyone_logs_in(client):
    html = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="zh-TW").content.decode()
    assert "登入" in html and "使用者名稱" in html and "Username" not in html


def test_a_language_glassbox_does_not_speak_falls_back_to_english(alice_client):
    html = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9").content.decode()
    assert '<html lang="en">' in html and "Your conversations" in html


def test_a_saved_language_wins_over_the_browsers(alice_client, alice):
    FeedPreferences.objects.create(user=alice, language="zh-hant")
    html = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "你的對話" in html


def test_the_switcher_saves_the_choice_and_returns_to_the_page(alice_client, alice):
    response = alice_client.post("/language/", {"language": "it", "next": "/preferences/"})
    assert response.status_code == 302 and response["Location"] == "/preferences/"
    assert response.cookies["django_language"].value == "it"
    assert FeedPreferences.language_of(alice.pk) == "it"
    # Another device, with another browser language, sees the saved choice.
    elsewhere = alice_client.get("/preferences/", HTTP_ACCEPT_LANGUAGE="en", cookies={})
    assert "Preferenze" in elsewhere.content.decode()


def test_the_switcher_works_before_login_with_a_cookie(client):
    response = client.post("/language/", {"language": "zh-hant", "next": "/accounts/login/"})
    assert response.status_code == 302
    html = client.get("/accounts/login/").content.decode()
    assert "使用者名稱" in html


def test_the_switcher_refuses_a_language_it_does_not_speak(alice_client, alice):
    response = alice_client.post("/language/", {"language": "klingon", "next": "/"})
    assert response.status_code == 400
    assert "does not speak that language" in response.content.decode()
    assert FeedPreferences.language_of(alice.pk) == ""


def test_the_switcher_never_sends_anyone_to_another_site(alice_client):
    response = alice_client.post(
        "/language/", {"language": "it", "next": "https://evil.example/phish"}
    )
    assert response["Location"] == "/"


def test_the_preferences_page_chooses_the_language_or_the_browsers(alice_client, alice):
    form = {
        "mode": "partial", "label_kind": "auto", "labels": "", "show_after": "5",
        "max_lines": "6", "detail": "explain", "tool_progress": "on", "line_width": "80",
    }  # fmt: skip
    response = alice_client.post("/preferences/", {**form, "language": "zh-hant"}, follow=True)
    html = response.content.decode()
    assert "已儲存。下一個問題將套用這些設定。" in html
    assert re.search(r'<option value="zh-hant" selected>', html)
    response = alice_client.post("/preferences/", {**form, "language": ""})
    assert FeedPreferences.language_of(alice.pk) == ""
    assert response.cookies["django_language"].value == ""  # the cookie is cleared
    html = alice_client.get("/preferences/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "Preferenze" in html


def test_times_are_written_the_readers_way(alice_client, alice_conversation):
    admit(conversation=alice_conversation, text="Ciao")
    italian = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    months = "|".join(ITALIAN_MONTHS.split())
    assert re.search(rf"\d+ ({months}) 20\d\d \d\d:\d\d", italian, re.IGNORECASE)
    assert "1 turno" in italian
    chinese = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="zh-TW").content.decode()
    assert re.search(r"20\d\d年\d+月\d+日", chinese)


@pytest.mark.parametrize(
    ("language", "short", "long"),
    [("en", "1.2 s", "12 s"), ("it", "1,2 s", "12 s"), ("zh-hant", "1.2 秒", "12 秒")],
)
def test_durations_are_written_the_readers_way(language, short, long):
    with translation.override(language):
        assert (seconds(1234), seconds(12_345)) == (short, long)


def test_a_turn_keeps_the_language_it_was_asked_in(alice_client, alice):
    conversation = Conversation.objects.create(owner=alice)
    with translation.override("it"):
        turn = admit(conversation=conversation, text="Ciao")
    assert turn.answer.answer_feed.language == "it"
    assert admit(conversation=Conversation.objects.create(owner=alice), text="bonus",
                      language="zh-hant").answer.answer_feed.language == "zh-hant"  # fmt: skip
