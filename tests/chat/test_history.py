from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed
from chat.models import Conversation, Message
from tests.support.conversations import next_page, stored
from tests.support.matching import found
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def converse(owner, *questions, title=""):
    conversation = Conversation.objects.create(owner=owner, title=title)
    for question in questions:
        run_turn(conversation, question)
    conversation.refresh_from_db()
    return conversation


def listed(client, query="") -> list[str]:
    html = client.get(f"/?{query}").content.decode()
    row = r'<li class="conversation-row">\s*<span class="row-main"><a href="/c/([0-9a-f-]+)/"'
    return re.findall(row, html)


def test_search_finds_the_salary_conversation_ranked_and_only_mine(
    alice_client, alice, bob, knowledge_base
):
    salary = converse(alice, "How do I negotiate my salary?")
    passing = stored(alice, ("What is a good salary?", "It depends."), ("Tell me more", "Ok."))
    converse(alice, "Tell me a joke")
    theirs = stored(bob, ("My salary secrets", "Hush."), title="Bob's salary")
    found = listed(alice_client, "q=salary+negotiate")
    assert found[0] == str(salary.pk)  # both words, many times
    assert str(passing.pk) in found
    assert str(theirs.pk) not in listed(alice_client, "q=salary")
    assert len(listed(alice_client, "q=salary")) == 2
    page = alice_client.get("/?q=penguin+submarine").content.decode()
    assert "No conversation matches “penguin submarine”" in page


def test_rows_show_title_last_activity_turns_and_failed_tools(alice_client, alice, knowledge_base):
    converse(alice, "Simulate a failure while looking up salaries", "Tell me a joke")
    html = alice_client.get("/").content.decode()
    row = html.split('<li class="conversation-row">')[1]
    assert "Simulate a failure while looking up salaries" in row
    assert "2 turns" in row and "⚠️ tool failed" in row and "<time datetime=" in row


def test_the_list_pages_by_thirty_and_loads_more_with_htmx(alice_client, alice):
    for number in range(31):
        stored(alice, (f"question {number}", "answer"), title=f"Conversation {number:02}")
    first = alice_client.get("/").content.decode()
    assert first.count('class="conversation-row"') == 30
    assert 'hx-get="?page=2&amp;after=' in first and 'hx-trigger="revealed, click"' in first
    second = alice_client.get(next_page(first), headers={"HX-Request": "true"}).content.decode()
    assert second.count('class="conversation-row"') == 1
    assert "<html" not in second and 'class="more"' not in second
    assert "Conversation 00" in second  # the oldest comes last


def test_rename_escapes_the_title_everywhere(alice_client, alice):
    conversation = stored(alice, ("q", "a"))
    url = f"/c/{conversation.pk}/rename/"
    htmx = {"HX-Request": "true"}
    response = alice_client.post(url, {"title": "<b>Pay</b> review"}, headers=htmx)
    title = '<h1 id="conversation-title">&lt;b&gt;Pay&lt;/b&gt; review</h1>'
    assert title in response.content.decode()
    for page in (f"/c/{conversation.pk}/", "/"):
        html = alice_client.get(page).content.decode()
        assert "&lt;b&gt;Pay&lt;/b&gt; review" in html and "<b>Pay</b>" not in html
    conversation.refresh_from_db()
    assert conversation.title == "<b>Pay</b> review"


@pytest.mark.parametrize(
    ("title", "reason"),
    [
        ("   ", "at least one word"),
        ("\u200b\u200d\ufeff", "at least one word"),
        ("Pay\x00 review", "NUL character"),
    ],
)
def test_a_refused_rename_is_shown_on_the_page_and_changes_nothing(
    alice_client, alice, title, reason
):
    conversation = stored(alice, ("q", "a"), title="")
    url = f"/c/{conversation.pk}/rename/"
    # htmx swaps only a 2xx answer: the refusal comes as the same title and a notice.
    refused = alice_client.post(url, {"title": title}, headers={"HX-Request": "true"})
    assert refused.status_code == 200
    page = refused.content.decode()
    assert '<h1 id="conversation-title">q</h1>' in page
    assert 'id="notice" hx-swap-oob="true"' in page and reason in page
    without_js = alice_client.post(url, {"title": title}, follow=True).content.decode()
    assert reason in without_js
    conversation.refresh_from_db()
    assert conversation.title == ""


def test_bidi_controls_cannot_disguise_a_title(alice_client, alice):
    conversation = stored(alice, ("q", "a"))
    alice_client.post(f"/c/{conversation.pk}/rename/", {"title": "invoice \u202efdp.exe"})
    conversation.refresh_from_db()
    assert conversation.title == "invoice fdp.exe"
    asked = stored(alice, ("report \u2067\u202egnp.bat", "a"), title="")
    listed_page = alice_client.get("/").content.decode()
    assert "invoice fdp.exe" in listed_page and "report gnp.bat" in listed_page
    assert "\u202e" not in listed_page and asked.display_title == "report gnp.bat"


def test_archive_and_unarchive(alice_client, alice):
    conversation = stored(alice, ("q", "a"))
    alice_client.post(f"/c/{conversation.pk}/archive/", {"archived": "1"})
    assert listed(alice_client) == []
    assert listed(alice_client, "archived=1") == [str(conversation.pk)]
    alice_client.post(f"/c/{conversation.pk}/archive/", {"archived": "0"})
    assert listed(alice_client) == [str(conversation.pk)]


def test_tidying_someone_elses_conversation_is_a_404(client, bob, alice):
    conversation = stored(alice, ("q", "a"), title="Mine")
    client.force_login(bob)
    for path, data in [("rename/", {"title": "x"}), ("archive/", {"archived": "1"}),
                       ("delete/", {})]:  # fmt: skip
        assert client.post(f"/c/{conversation.pk}/{path}", data).status_code == 404
    conversation.refresh_from_db()
    assert (conversation.title, conversation.archived_at, conversation.deleted_at) == (
        "Mine",
        None,
        None,
    )


def test_deleting_hides_at_once_and_admins_audit_until_the_retention_ends(
    settings, alice_client, alice, knowledge_base
):
    conversation = converse(alice, "How do I negotiate my salary?")
    feed_id = ActivityFeed.objects.get(conversation_id=conversation.pk).pk
    confirm = alice_client.get(f"/c/{conversation.pk}/delete/").content.decode()
    assert "Delete this conversation?" in confirm and "30 days" in confirm
    alice_client.post(f"/c/{conversation.pk}/delete/")

    assert listed(alice_client) == []
    assert alice_client.get(f"/c/{conversation.pk}/").status_code == 404
    assert alice_client.get(f"/api/conversations/{conversation.pk}/").status_code == 404
    assert alice_client.get("/api/feeds/").json()["results"] == []

    admin = get_user_model().objects.create_superuser("root", password="x")
    alice_client.force_login(admin)
    audit = alice_client.get("/admin/chat/conversation/?status=deleted").content.decode()
    assert "deleted (retained for audit)" in audit
    assert alice_client.get(f"/admin/activity/activityfeed/{feed_id}/change/").status_code == 200

    call_command("purge_deleted")  # inside the retention period: nothing goes
    assert ActivityFeed.objects.filter(pk=feed_id).exists()
    Conversation.all_objects.filter(pk=conversation.pk).update(
        deleted_at=timezone.now() - timedelta(days=settings.GLASSBOX_RETENTION_DAYS + 1)
    )
    call_command("purge_deleted")
    assert not Conversation.all_objects.filter(pk=conversation.pk).exists()
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()
    assert not ActivityFeed.objects.filter(pk=feed_id).exists()
    assert not ActivityEvent.objects.filter(feed_id=feed_id).exists()
    call_command("purge_deleted")  # safe to run again


def test_a_long_conversation_opens_at_its_latest_turns_and_loads_earlier_ones(alice_client, alice):
    conversation = stored(alice, *[(f"question {n}", f"answer {n}") for n in range(25)])
    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert "question 24" in page and "question 5" in page and "question 4<" not in page
    before = found(r'hx-get="\?before=(\d+)"', page)
    earlier = alice_client.get(f"/c/{conversation.pk}/?before={before}",
                               headers={"HX-Request": "true"}).content.decode()  # fmt: skip
    assert "<html" not in earlier
    assert [int(n) for n in re.findall(r"question (\d+)", earlier)] == [0, 1, 2, 3, 4]
    assert "answer 4" in earlier and "Load earlier turns" not in earlier


def test_a_window_never_splits_a_turn(alice_client, alice):
    conversation = stored(alice, *[(f"question {n}", f"answer {n}") for n in range(25)])
    answer_21 = Message.objects.get(content="answer 21")
    page = alice_client.get(f"/c/{conversation.pk}/?before={answer_21.pk}").content.decode()
    assert "question 21" not in page and "answer 20" in page


def test_a_deep_link_opens_that_turn(alice_client, alice):
    conversation = stored(alice, *[(f"question {n}", f"answer {n}") for n in range(25)])
    answer_2 = Message.objects.get(content="answer 2")
    page = alice_client.get(f"/c/{conversation.pk}/?from={answer_2.pk}").content.decode()
    assert f'id="m-{answer_2.pk}"' in page and "question 2" in page
    assert "question 1<" not in page


def test_downloads_as_markdown_and_json(alice_client, alice, knowledge_base):
    conversation = converse(alice, "How do I negotiate my salary?", "Tell me a joke")
    markdown = alice_client.get(f"/c/{conversation.pk}/export.md")
    assert markdown["Content-Type"] == "text/markdown; charset=utf-8"
    assert 'filename="how-do-i-negotiate-my-salary.md"' in markdown["Content-Disposition"]
    text = markdown.content.decode()
    assert text.startswith("# How do I negotiate my salary?\n")
    assert "## How do I negotiate my salary?" in text and "## Tell me a joke" in text
    assert "<summary>📄 Searched the knowledge base</summary>" in text
    assert "- 📄 Found 3 documents · " in text
    assert "**Salary negotiation: preparing your number**" in text

    data = json.loads(alice_client.get(f"/c/{conversation.pk}/export.json").content)
    answer = data["messages"][1]
    stored_events = ActivityEvent.objects.filter(feed__message__pk=answer["id"])
    assert [e["seq"] for e in answer["feed"]["events"]] == sorted(
        stored_events.values_list("seq", flat=True)
    )
    assert answer["feed"]["events"][0]["type"] == "status"
    assert alice_client.get(f"/c/{conversation.pk}/export.pdf").status_code == 404


def test_a_search_for_what_cannot_be_stored_is_refused_clearly(alice_client, alice):
    stored(alice, ("q", "a"))
    page = alice_client.get("/?q=pay%00rise", follow=True)
    assert page.status_code == 200
    assert "NUL character" in page.content.decode()


@pytest.mark.parametrize("value", ["²", "٣", "-1", "1e3", "99999999999999999999999"])
def test_odd_page_positions_open_the_conversation(alice_client, alice, value):
    conversation = stored(alice, ("q", "a"))
    for name in ("before", "from"):
        assert alice_client.get(f"/c/{conversation.pk}/?{name}={value}").status_code == 200


def test_the_markdown_download_is_as_inert_as_the_page(alice_client, alice):
    answer = (
        'Look: <img src="x" onerror="alert(1)"> and ![chart](https://evil.example/leak.png)\n\n'
        "```html\n<b>kept as code</b>\n```\n\nInline `<i>code</i>` too."
    )
    conversation = stored(alice, ("<script>alert(2)</script> what?", answer), title="")
    text = alice_client.get(f"/c/{conversation.pk}/export.md").content.decode()
    assert "<img" not in text and "<script" not in text and "![" not in text
    assert "&lt;img" in text and "[chart](https://evil.example/leak.png)" in text
    assert "```html\n<b>kept as code</b>\n```" in text and "`<i>code</i>`" in text
