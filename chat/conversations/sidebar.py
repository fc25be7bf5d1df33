"""The conversation page's sidebar: the user's conversations grouped by when they were last
active, and, for a search, a snippet of what matched with the words marked."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from chat.models import Message
from project.text_rules import without_bidi_controls

# Characters of context on each side of the first matched word.
SNIPPET_CONTEXT = 60


@dataclass(frozen=True, slots=True)
class Group:
    label: str
    conversations: list[Any] = field(default_factory=list)


def by_day(conversations: Iterable[Any], *, now: datetime | None = None) -> list[Group]:
    """Newest first, in the groups a reader scans by: Today, Yesterday, Previous 7 days,
    Previous 30 days, then one group a month. Days are the reader's (the active time zone)."""
    today = timezone.localdate(now or timezone.now())
    groups: list[Group] = []
    for conversation in conversations:
        label = _day_label(timezone.localdate(conversation.last_activity), today)
        if not groups or groups[-1].label != label:
            groups.append(Group(label))
        groups[-1].conversations.append(conversation)
    return groups


def _day_label(day: date, today: date) -> str:
    if day >= today:
        return _("Today")
    if day == today - timedelta(days=1):
        return _("Yesterday")
    if day > today - timedelta(days=7):
        return _("Previous 7 days")
    if day > today - timedelta(days=30):
        return _("Previous 30 days")
    return date_format(day, "YEAR_MONTH_FORMAT")


def with_snippets(conversations: Sequence[Any], query: str) -> None:
    """Gives each conversation of a search result its `snippet`: the first message (or the
    title) that holds one of the words, cut around it, escaped, the words in <mark>. One
    query for the whole page of results."""
    terms = [t for t in query.split()[:8] if t]
    if not terms or not conversations:
        return
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    found: dict[Any, str] = {}
    for conversation in conversations:
        if conversation.title and pattern.search(conversation.title):
            found[conversation.pk] = conversation.title
    rest = [c.pk for c in conversations if c.pk not in found]
    if rest:
        rows = Message.objects.filter(conversation_id__in=rest).order_by("id")
        # Only rows that can match are read: the words as the database compares them.
        matching = Q()
        for term in terms:
            matching |= Q(content__icontains=term)
        for conversation_id, content in rows.filter(matching).values_list(
            "conversation_id", "content"
        ):
            if conversation_id not in found and pattern.search(content):
                found[conversation_id] = content
    for conversation in conversations:
        text = found.get(conversation.pk)
        conversation.snippet = snippet(text, pattern) if text else ""


def snippet(text: str, pattern: re.Pattern[str]) -> SafeString:
    """`text` cut to the context around the first match, escaped, every match marked."""
    text = " ".join(without_bidi_controls(text).split())
    first = pattern.search(text)
    if first is None:
        return mark_safe(escape(text[: 2 * SNIPPET_CONTEXT]))
    start = max(0, first.start() - SNIPPET_CONTEXT)
    end = min(len(text), first.end() + SNIPPET_CONTEXT)
    shown = text[start:end]
    parts: list[str] = ["…" if start else ""]
    at = 0
    for match in pattern.finditer(shown):
        parts.append(escape(shown[at : match.start()]))
        parts.append(f"<mark>{escape(match.group())}</mark>")
        at = match.end()
    parts.append(escape(shown[at:]))
    parts.append("…" if end < len(text) else "")
    return mark_safe("".join(parts))  # every piece of text above is escaped
