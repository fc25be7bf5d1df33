from __future__ import annotations

import math
from datetime import timedelta

from django import template
from django.utils.safestring import mark_safe

from activity.presenting.live_markdown import split_settled
from chat.conversations.markdown import close_cut, render_markdown
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
