"""What waits for a person, across all their conversations: one inbox of every kind of wait
(chat.asks.waiting.KINDS), each listed in one shape (kind, conversation, title, deadline,
where to answer) through the Waiting protocol; a new kind plugs in by adding itself there."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, Subquery
from django.urls import reverse

from chat.asks.waiting import KINDS, ApprovalWait, QuestionWait, Waiting
from chat.models import Conversation, Message


@dataclass(frozen=True, slots=True)
class WaitingItem:
    kind: str
    key: str
    conversation_id: uuid.UUID
    # As the conversation list names it: an untitled one by its first question.
    conversation_title: str
    # The turn that waits: the item links to it (its feed opens, chat/static/glassbox.js).
    answer_id: int
    title: str
    deadline: datetime
    # The page's form posts here (the inbox's own route goes on to the same turn pipeline).
    answer_url: str
    # The REST endpoint a program answers at.
    api_url: str
    # What the inbox shows to decide with: for an approval, its card.
    card: Any = None

    @property
    def turn_url(self) -> str:
        return reverse("chat:conversation_detail", args=[self.conversation_id]) + (
            f"#m-{self.answer_id}"
        )


def _item_of(wait: Waiting, conversation: Conversation, first_question: str | None) -> WaitingItem:
    """A wait as the inbox lists it, with its conversation as the conversation list names
    it (an untitled one by its first question)."""
    return WaitingItem(
        kind=wait.kind,
        key=wait.key,
        conversation_id=conversation.pk,
        conversation_title=Conversation.title_of(conversation.title, first_question),
        answer_id=wait.answer_id,
        title=wait.title,
        deadline=wait.deadline,
        answer_url=wait.answer_url,
        api_url=wait.api_url,
        card=wait.card(),
    )


def _items(kind: type[ApprovalWait] | type[QuestionWait], user: Any) -> list[WaitingItem]:
    # The first question comes along in the same query, as the conversation list's does.
    first_question = Message.objects.filter(
        conversation=OuterRef("answer__conversation"), role=Message.Role.USER
    ).order_by("id")
    rows = (
        kind.waiting_for(user)
        .select_related("answer__conversation")
        .annotate(first_question=Subquery(first_question.values("content")[:1]))
    )
    return [
        _item_of(kind(row), row.answer.conversation, row.first_question)  # type: ignore[arg-type]
        for row in rows.order_by("deadline", "pk")[:INBOX_LIMIT]
    ]


# At most this many of each kind on the page; the badge counts them all.
INBOX_LIMIT = 100


def waiting_count(user: Any) -> int:
    """One query for every page's badge, however many sources: each source's rule as it
    stands, one row per waiting item (its answer's id, a column all sources share in type),
    counted over their UNION ALL."""
    if not getattr(user, "is_authenticated", False):
        return 0
    first, *others = (kind.waiting_for(user).order_by().values("answer_id") for kind in KINDS)
    return first.union(*others, all=True).count()


def waiting_items(user: Any) -> list[WaitingItem]:
    """Everything that waits for `user`, the nearest deadline first."""
    items = [item for kind in KINDS for item in _items(kind, user)]
    return sorted(items, key=lambda item: item.deadline)
