"""The approval card in a conversation page, and the inbox badge on every page."""

from __future__ import annotations

import asyncio
from typing import Any

from django import template
from django.urls import reverse

from chat.turns.inbox import waiting_count
from chat.turns.receipts import waiting_card

register = template.Library()


@register.inclusion_tag("chat/_approval_card_slot.html")
def approval_card(message: Any) -> dict[str, Any]:
    """Where a turn's card goes: the card of its waiting call, or the empty slot a live card
    is swapped into (one query, for a waiting answer only). A socket renders on its event
    loop, where the ORM may not run (Django's own test for it): there the slot is rendered
    and the socket sends the card itself (chat.socket.viewer)."""
    waiting = message.state == "waiting" and not _on_event_loop()
    card = waiting_card(message.pk) if waiting else None
    return {
        "answer_id": message.pk,
        "card": card,
        "answer_url": reverse("chat:conversation_act", args=[message.conversation_id]),
    }


@register.inclusion_tag("chat/_inbox_badge.html", takes_context=True)
def inbox_badge(context: template.Context) -> dict[str, Any]:
    """A plain link with the count at render time; htmx keeps it current where JS runs."""
    request = context.get("request")
    user = getattr(request, "user", None)
    return {"count": waiting_count(user)}


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
