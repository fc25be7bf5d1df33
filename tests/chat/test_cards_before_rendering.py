"""Approval cards are read before a page renders (chat.asks.cards) and templates draw only
what they are handed: a waiting answer's card on its page, its fields open after Change, and
no query while the message or the sidebar renders."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.template.loader import render_to_string
from django.test import AsyncClient, Client
from django.test.utils import CaptureQueriesContext

from activity.preferences.feed_prefs import FeedPrefs
from chat.asks.cards import cards_for
from chat.conversations import selectors
from chat.models import ToolApproval
from chat.turns.registry import finish_all

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet?"


async def _waiting(alice, conversation) -> tuple[AsyncClient, ToolApproval]:
    client = AsyncClient()
    await client.aforce_login(alice)
    await client.post(f"/c/{conversation.pk}/act/", {"message": EMAIL})
    await finish_all()
    return client, await ToolApproval.objects.select_related("answer").aget()


def _card(page: str, answer_id: int) -> str:
    found = re.search(rf'<section id="approval-{answer_id}" class="([^"]*)"', page)
    assert found, "no approval card on the page"
    return found[1]


async def test_the_page_shows_the_card_it_was_handed_and_opens_it_after_change(
    alice, alice_conversation
):
    client, approval = await _waiting(alice, alice_conversation)
    url = f"/c/{alice_conversation.pk}/"

    page = (await client.get(url)).content.decode()
    assert _card(page, approval.answer_id) == "approval-card"
    assert f'name="approve" value="{approval.call_id}"' in page
    assert f'action="/c/{alice_conversation.pk}/act/"' in page
    changing = (await client.get(f"{url}?change={approval.answer_id}")).content.decode()
    assert _card(changing, approval.answer_id) == "approval-card editing"


async def test_a_waiting_answer_renders_without_a_query_and_without_a_card_it_was_not_handed(
    alice, alice_conversation
):
    _client, approval = await _waiting(alice, alice_conversation)

    def rendered(with_cards: bool) -> tuple[str, int]:
        history = selectors.messages_with_feeds(alice_conversation, FeedPrefs())
        (answer,) = [m for m in history.messages if m.pk == approval.answer_id]
        cards = cards_for(history.messages) if with_cards else {}
        with CaptureQueriesContext(connection) as queries:
            html = render_to_string(
                "chat/_assistant_message.html", {"message": answer, "cards": cards, "oob": False}
            )
        return html, len(queries)

    html, queried = await sync_to_async(rendered)(True)
    assert queried == 0
    assert _card(html, approval.answer_id) == "approval-card"
    slot, queried = await sync_to_async(rendered)(False)
    assert queried == 0
    assert f'<div id="approval-{approval.answer_id}" class="approval-slot"></div>' in slot


async def test_cards_for_reads_every_waiting_answer_at_once_and_none_when_nothing_waits(
    alice, alice_conversation
):
    _client, approval = await _waiting(alice, alice_conversation)

    def read(states: str) -> tuple[dict, int]:
        answers = list(alice_conversation.messages.filter(state__in=states.split()))
        with CaptureQueriesContext(connection) as queries:
            cards = cards_for(answers, editing=approval.answer_id)
        return cards, len(queries)

    cards, queried = await sync_to_async(read)("waiting user")
    assert queried == 1 and list(cards) == [approval.answer_id]
    assert cards[approval.answer_id].editing and cards[approval.answer_id].call_id == (
        approval.call_id
    )
    cards, queried = await sync_to_async(read)("complete")
    assert (cards, queried) == ({}, 0)


async def test_the_sidebar_fragment_does_not_count_the_inbox_but_a_page_does(
    alice, alice_conversation
):
    await _waiting(alice, alice_conversation)
    # The badge's count is one UNION ALL over every kind of wait (chat.asks.inbox).
    counted = "UNION ALL"

    def visit(url: str) -> tuple[str, int]:
        client = Client()
        client.force_login(alice)
        with CaptureQueriesContext(connection) as queries:
            page = client.get(url)
        assert page.status_code == 200
        return page.content.decode(), sum(counted in q["sql"] for q in queries.captured_queries)

    sidebar, counts = await sync_to_async(visit)("/sidebar/")
    assert 'id="inbox-badge"' not in sidebar and counts == 0
    listed, counts = await sync_to_async(visit)("/")
    assert 'class="count">1<' in listed and counts == 1
