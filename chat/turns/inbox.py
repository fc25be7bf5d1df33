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

from django.db.models import QuerySet
from django.urls import reverse
from django.utils.translation import gettext as _

from chat.models import Elicitation, Message, ToolApproval
from chat.turns import question_cards
from chat.turns.receipts import ApprovalCard, card_of


@dataclass(frozen=True, slots=True)
class WaitingItem:
    kind: str
    key: str
    conversation_id: uuid.UUID
    conversation_title: str
    title: str
    deadline: datetime
    # The page's form posts here (the inbox's own route goes on to the same turn pipeline).
    answer_url: str
    # The REST endpoint a program answers at.
    api_url: str
    # What the inbox shows to decide with: for an approval, its card.
    card: Any = None


@dataclass(frozen=True, slots=True)
class Source:
    """One kind of waiting item: its rule (what waits for a user, counted by the badge on
    every page) and the items themselves (for the inbox)."""

    waiting: Callable[[Any], QuerySet[Any]]
    items: Callable[[Any], list[WaitingItem]]


def _waiting_approvals(user: Any) -> QuerySet[ToolApproval]:
    # The turn's state is the truth: a row decided, stopped or timed out no longer waits.
    return ToolApproval.objects.filter(
        decision="",
        answer__state=Message.State.WAITING,
        answer__conversation__owner=user,
        answer__conversation__deleted_at__isnull=True,
    )


def _approval_items(user: Any) -> list[WaitingItem]:
    approvals = _waiting_approvals(user).select_related("answer__conversation")
    items = []
    for approval in approvals.order_by("deadline", "pk")[:INBOX_LIMIT]:
        conversation = approval.answer.conversation
        card: ApprovalCard = card_of(approval, standalone=True)
        items.append(
            WaitingItem(
                kind="approval",
                key=f"approval-{approval.pk}",
                conversation_id=conversation.pk,
                conversation_title=conversation.title or _("New conversation"),
                title=_("Run %(tool)s?") % {"tool": approval.tool},
                deadline=approval.deadline,
                answer_url=reverse("chat:inbox_act", args=[conversation.pk]),
                api_url=reverse("api-approval", args=[conversation.pk, approval.call_id]),
                card=card,
            )
        )
    return items


def _waiting_questions(user: Any) -> QuerySet[Elicitation]:
    # A question waits only while its turn runs: one whose turn ended can reach no server.
    return Elicitation.objects.filter(
        state=Elicitation.State.WAITING,
        answer__state=Message.State.STREAMING,
        answer__conversation__owner=user,
        answer__conversation__deleted_at__isnull=True,
    )


def _question_items(user: Any) -> list[WaitingItem]:
    questions = _waiting_questions(user).select_related("answer__conversation")
    items = []
    for question in questions.order_by("deadline", "pk")[:INBOX_LIMIT]:
        conversation = question.answer.conversation
        items.append(
            WaitingItem(
                kind="question",
                key=f"waiting-question-{question.pk}",
                conversation_id=conversation.pk,
                conversation_title=conversation.title or _("New conversation"),
                title=_("The %(server)s server asks") % {"server": question.server},
                deadline=question.deadline,
                # Answered like on its page; programs answer over the conversation's socket.
                answer_url=reverse("chat:conversation_act", args=[conversation.pk]),
                api_url="",
                card=question_cards.card_of(question),
            )
        )
    return items


# At most this many of each kind on the page; the badge counts them all.
INBOX_LIMIT = 100
SOURCES: list[Source] = [
    Source(waiting=_waiting_approvals, items=_approval_items),
    Source(waiting=_waiting_questions, items=_question_items),
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
