"""The conversation page's sidebar: the user's own conversations by day, the current one
marked, a search that shows what matched, and pages told when the list changes."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone

from chat.conversations import sidebar
from chat.models import Conversation, Message
from chat.pages.views import SIDEBAR_SIZE
from chat.turns.broadcast import sidebar_group
from tests.support.conversations import stored
from tests.support.matching import found

pytestmark = pytest.mark.django_db(transaction=True)


def aged(conversation: Conversation, days: float) -> Conversation:
    when = timezone.now() - timedelta(days=days)
    Message.objects.filter(conversation=conversation).update(created_at=when)
    return conversation


def groups_of(client, **params) -> list[tuple[str, list[str]]]:
    html = client.get("/sidebar/", params).content.decode()
    found = []
    for label, items in re.findall(
        r'<h2 class="sidebar-group">(.*?)</h2>\s*<ul>(.*?)</ul>', html, re.S
    ):
        titles = re.findall(r'<span class="title">(.*?)</span>', items)
        found.append((label, titles))
    return found


def test_conversations_are_grouped_by_the_day_they_were_last_active(alice_client, alice):
    aged(stored(alice, ("q", "a"), title="Long ago"), 90)
    aged(stored(alice, ("q", "a"), title="Last week"), 4)
    aged(stored(alice, ("q", "a"), title="Yesterday's"), 1)
    stored(alice, ("q", "a"), title="Now")
    groups = groups_of(alice_client)
    assert [label for label, _ in groups][:3] == ["Today", "Yesterday", "Previous 7 days"]
    assert [titles for _, titles in groups] == [
        ["Now"],
        ["Yesterday&#x27;s"],
        ["Last week"],
        ["Long ago"],
    ]


def test_the_sidebar_shows_only_mine_and_marks_the_current_one(alice_client, alice, bob):
    mine = stored(alice, ("q", "a"), title="Mine")
    stored(bob, ("q", "a"), title="Bob's secret")
    page = alice_client.get(mine.get_absolute_url()).content.decode()
    assert "Bob&#x27;s secret" not in page
    assert f'<a href="/c/{mine.pk}/" aria-current="page">' in page
    assert "Bob" not in alice_client.get("/sidebar/", {"q": "secret"}).content.decode()


def test_a_search_shows_an_escaped_snippet_with_the_words_marked(alice_client, alice):
    stored(alice, ("How do I <b>negotiate</b> my salary?", "Start with research. " * 20))
    stored(alice, ("Tell me a joke", "Why did the chicken…"), title="Jokes")
    html = alice_client.get("/sidebar/", {"q": "negotiate"}).content.decode()
    assert "Results" in html and "Jokes" not in html
    assert (
        '<span class="snippet">How do I &lt;b&gt;<mark>negotiate</mark>&lt;/b&gt; my '
        "salary?</span>" in html
    )
    # A word of an answer: the snippet is cut around it.
    html = alice_client.get("/sidebar/", {"q": "research"}).content.decode()
    snippet = found(r'<span class="snippet">(.*?)</span>', html)
    assert snippet.count("<mark>research</mark>") >= 1 and snippet.endswith("…")
    assert len(re.sub(r"</?mark>", "", snippet)) <= 2 * sidebar.SNIPPET_CONTEXT + 12


def test_a_search_finds_a_title_the_user_gave(alice_client, alice):
    stored(alice, ("q", "a"), title="Quarterly plan")
    html = alice_client.get("/sidebar/", {"q": "quarterly"}).content.decode()
    assert '<span class="snippet"><mark>Quarterly</mark> plan</span>' in html
    assert (
        "No conversation matches" in alice_client.get("/sidebar/", {"q": "zebra"}).content.decode()
    )


def test_the_history_page_search_shows_snippets_too(alice_client, alice):
    stored(alice, ("Where is the office? Up the <b>stairs</b>.", "Upstairs."), title="")
    html = alice_client.get("/", {"q": "office"}).content.decode()
    snippet = "Where is the <mark>office</mark>? Up the &lt;b&gt;stairs&lt;/b&gt;."
    assert f'<span class="snippet">{snippet}</span>' in html


def test_the_list_is_bounded_and_links_to_the_rest(alice_client, alice):
    for n in range(SIDEBAR_SIZE + 1):
        Conversation.objects.create(owner=alice, title=f"c{n}")
    html = alice_client.get("/sidebar/").content.decode()
    assert html.count('<span class="title">') == SIDEBAR_SIZE
    assert "All conversations" in html


@pytest.mark.asyncio
async def test_renaming_tells_the_owners_pages_to_refresh_their_sidebars(alice_client, alice):
    conversation = await sync_to_async(stored)(alice, ("q", "a"))
    layer = get_channel_layer()
    assert layer is not None
    channel = await layer.new_channel()
    await layer.group_add(sidebar_group(alice.pk), channel)
    rename = sync_to_async(alice_client.post)
    await rename(f"/c/{conversation.pk}/rename/", {"title": "Renamed"})
    told = {"type": "conversations.changed", "conversation": str(conversation.pk)}
    assert await asyncio.wait_for(layer.receive(channel), 5) == told


def test_the_snippet_of_a_text_without_the_word_is_its_start_escaped():
    pattern = re.compile("zzz")
    assert sidebar.snippet("<i>" + "a" * 300, pattern) == "&lt;i&gt;" + "a" * 117
