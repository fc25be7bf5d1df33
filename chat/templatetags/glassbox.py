from __future__ import annotations

import math
from datetime import timedelta
from decimal import Decimal

from django import template
from django.conf import settings
from django.utils.formats import number_format
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from activity.live_markdown import split_settled
from activity.presentation import seconds
from chat.conversations.markdown import render_markdown
from chat.pages.forms import ContactForm

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    return mark_safe(render_markdown(text or ""))  # sanitized by nh3


register.filter("seconds", seconds)


@register.filter
def seconds_format(_value: object) -> str:
    """How a count of seconds reads ("%(seconds)s s"), for the page's live counters."""
    return _("%(seconds)s s")


@register.filter
def tokens(count: int) -> str:
    """ "1,234 tokens", in the reader's notation."""
    shown = number_format(count, force_grouping=True)
    return ngettext("%(count)s token", "%(count)s tokens", count) % {"count": shown}


@register.filter
def cost(amount: Decimal) -> str:
    """A turn's cost with as many decimals as it needs (at most six), and the currency."""
    places = 2 if amount >= 1 else 4 if amount >= Decimal("0.01") else 6
    shown = number_format(amount, decimal_pos=places, force_grouping=True)
    return f"{shown} {settings.GLASSBOX_CURRENCY}"


@register.filter
def state_word(state: str) -> str:
    return _("failed") if state == "failed" else _("done")


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
