from __future__ import annotations

import math
from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from activity.presenting.live_markdown import split_settled
from activity.recording.events import Score
from chat.asks.approval_cards import ApprovalCard, CardField
from chat.conversations.markdown import close_cut, render_markdown
from chat.conversations.selectors import Ratings
from chat.pages.forms import ContactForm

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    return mark_safe(render_markdown(text or ""))  # sanitized by nh3


@register.filter
def markdown_cut(text: str) -> str:
    """An answer that ended before it was finished: what it left open is closed first."""
    return mark_safe(render_markdown(close_cut(text or "")))  # sanitized by nh3


@register.filter
def contact_form(message) -> ContactForm:
    return ContactForm()


@register.filter
def minutes(duration: timedelta | None) -> int:
    """Whole minutes, rounded up: a wait is never shown shorter than it is."""
    return math.ceil(duration.total_seconds() / 60) if duration else 0


@register.filter
def settled_and_tail(text: str) -> tuple[str, str]:
    """A streaming answer as the live page shows it: settled blocks, then the raw tail."""
    return split_settled(text or "")


THEMES = ("light", "dark")


@register.filter
def theme(request) -> str:
    """The theme the reader chose (the page's toggle keeps it in a cookie); '' follows the
    system's (prefers-color-scheme)."""
    chosen = getattr(request, "COOKIES", {}).get("theme", "")
    return chosen if chosen in THEMES else ""


@register.filter
def card_of(cards: dict[int, ApprovalCard] | None, answer_id: int) -> ApprovalCard | None:
    """The card the page was handed for an answer (chat.asks.cards.cards_for), if any."""
    return (cards or {}).get(answer_id)


@register.filter
def rating_of(ratings: Ratings | None, target: str) -> Score | None:
    """The asker's current rating of one target of an answer ("" the answer itself)."""
    return ratings.current.get(target) if ratings else None


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
