"""What waits for a person, across all their conversations: one inbox fed by sources. Each
source gives its waiting items in one shape (kind, conversation, title, deadline, where to
answer); approvals are the first source, and a second kind of waiting item (a server's
question mid-call) plugs in by adding its source to SOURCES."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse
from django.utils.translation import gettext as _

from chat.asks import question_cards
from chat.asks.approval_cards import ApprovalCard, card_of
from chat.models import Conversation, Elicitation, Message, ToolApproval


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


@dataclass(frozen=True, slots=True)
class Source:
    """One kind of waiting item: its rule (what waits for a user, counted by the badge on
    every page) and how the inbox shows one of its rows."""

    waiting: Callable[[Any], QuerySet[Any]]
    item: Callable[[Any], WaitingItem]

    def items(self, user: Any) -> list[WaitingItem]:
        # The first question comes along in the same query, as the conversation list's does.
        first_question = Message.objects.filter(
            conversation=OuterRef("answer__conversation"), role=Message.Role.USER
        ).order_by("id")
        rows = (
            self.waiting(user)
            .select_related("answer__conversation")
            .annotate(first_question=Subquery(first_question.values("content")[:1]))
        )
        return [self.item(row) for row in rows.order_by("deadline", "pk")[:INBOX_LIMIT]]


def _item_of(
    row: ToolApproval | Elicitation,
    *,
    kind: str,
    key: str,
    title: str,
    answer_url: str,
    api_url: str,
    card: Any,
) -> WaitingItem:
    """A waiting row with its conversation and deadline, as every source's rows have them
    (and the first question of the conversation, annotated by Source.items)."""
    conversation = row.answer.conversation
    first_question: str | None = row.first_question  # type: ignore[union-attr]
    return WaitingItem(
        kind=kind,
        key=key,
        conversation_id=conversation.pk,
        conversation_title=Conversation.title_of(conversation.title, first_question),
        answer_id=row.answer_id,
        title=title,
        deadline=row.deadline,
        answer_url=answer_url,
        api_url=api_url,
        card=card,
    )


def _waiting_approvals(user: Any) -> QuerySet[ToolApproval]:
    # The turn's state is the truth: a row decided, stopped or timed out no longer waits.
    return ToolApproval.objects.filter(
        decision="",
        answer__state=Message.State.WAITING,
        answer__conversation__owner=user,
        answer__conversation__deleted_at__isnull=True,
    )


def _approval_item(approval: ToolApproval) -> WaitingItem:
    conversation_id = approval.answer.conversation_id
    card: ApprovalCard = card_of(approval, standalone=True)
    return _item_of(
        approval,
        kind="approval",
        key=f"approval-{approval.pk}",
        title=card.title,
        answer_url=reverse("chat:inbox_act", args=[conversation_id]),
        api_url=reverse("api-approval", args=[conversation_id, approval.call_id]),
        card=card,
    )


def _waiting_questions(user: Any) -> QuerySet[Elicitation]:
    # A question waits only while its turn runs: one whose turn ended can reach no server.
    return Elicitation.objects.filter(
        state=Elicitation.State.WAITING,
        answer__state=Message.State.STREAMING,
        answer__conversation__owner=user,
        answer__conversation__deleted_at__isnull=True,
    )


def _question_item(question: Elicitation) -> WaitingItem:
    return _item_of(
        question,
        kind="question",
        key=f"waiting-question-{question.pk}",
        title=_("The %(server)s server asks") % {"server": question.server},
        # Answered like on its page; programs answer over the conversation's socket.
        answer_url=reverse("chat:conversation_act", args=[question.answer.conversation_id]),
        api_url="",
        card=question_cards.card_of(question),
    )


# At most this many of each kind on the page; the badge counts them all.
INBOX_LIMIT = 100
SOURCES: list[Source] = [
    Source(waiting=_waiting_approvals, item=_approval_item),
    Source(waiting=_waiting_questions, item=_question_item),
]


def waiting_count(user: Any) -> int:
    """One query for every page's badge, however many sources: each source's rule as it
    stands, one row per waiting item (its answer's id, a column all sources share in type),
    counted over their UNION ALL."""
    if not getattr(user, "is_authenticated", False):
        return 0
    first, *others = (source.waiting(user).order_by().values("answer_id") for source in SOURCES)
    return first.union(*others, all=True).count()


def waiting_items(user: Any) -> list[WaitingItem]:
    """Everything that waits for `user`, the nearest deadline first."""
    items = [item for source in SOURCES for item in source.items(user)]
    return sorted(items, key=lambda item: item.deadline)
