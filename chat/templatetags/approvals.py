"""The approval card in a conversation page, and the inbox badge on every page."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from chat.asks.approval_cards import ApprovalCard, CardField, waiting_card
from chat.asks.inbox import waiting_count

register = template.Library()


@register.inclusion_tag("chat/_approval_card_slot.html", takes_context=True)
def approval_card(context: template.Context, message: Any) -> dict[str, Any]:
    """Where a turn's card goes: the card of its waiting call, or the empty slot a live card
    is swapped into (one query, for a waiting answer only). The page may hand over the card
    as an edit it refused left it (`refused_card`), or name the answer whose card is being
    changed (`changing`). A socket renders on its event loop, where the ORM may not run
    (Django's own test for it): there the slot is rendered and the socket sends the card
    itself (chat.socket.viewer)."""
    refused = context.get("refused_card")
    if refused is not None and refused.answer_id == message.pk:
        card = refused
    elif message.state == "waiting" and not _on_event_loop():
        card = waiting_card(message.pk, editing=context.get("changing") == message.pk)
    else:
        card = None
    return {
        "answer_id": message.pk,
        "card": card,
        "answer_url": reverse("chat:conversation_act", args=[message.conversation_id]),
    }


@register.filter
def clock_time(moment: datetime) -> SafeString:
    """A deadline as a <time>: its time of day in the reader's format, with its date too
    when it is not today."""
    local = timezone.localtime(moment)
    today = local.date() == timezone.localdate()
    shown = date_format(local, "TIME_FORMAT" if today else "SHORT_DATETIME_FORMAT")
    return format_html('<time datetime="{}">{}</time>', local.isoformat(), shown)


@register.simple_tag
def field_attrs(card: ApprovalCard, field: CardField) -> SafeString:
    """What ties a card's field to its error and its hint, and, being edited, marks it
    required, or the one to start in."""
    described = [f"{field.dom_id}-error"] if field.error else []
    if field.description:
        described.append(f"{field.dom_id}-about")
    shown = format_html(' aria-describedby="{}"', " ".join(described)) if described else ""
    if field.error:
        shown += ' aria-invalid="true"'
    if card.editing and field.editable:
        shown += " required" if field.required else ""
        shown += " autofocus" if field.name == card.focus else ""
    return mark_safe(shown)  # the ids are ours: the card's number and the field's


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
