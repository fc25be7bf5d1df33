"""The cards of what waits, for whoever draws them: pages and sockets ask here before they
render, and templates only show what they are handed (no query while a template renders,
and none on a socket's event loop)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from activity.recording.events import AppView
from chat.asks.approval_cards import ApprovalCard, card_of, with_refusal
from chat.asks.question_cards import QuestionCard, cards
from chat.asks.receipts import EditRefused, Edits
from chat.conversations.selectors import TurnView
from chat.models import Message, ToolApproval


def _waiting() -> QuerySet[ToolApproval]:
    return ToolApproval.objects.waiting().select_related("answer")


def cards_for(
    answers: Iterable[Any], *, editing: int | None = None, refused: ApprovalCard | None = None
) -> dict[int, ApprovalCard]:
    """The approval card of each waiting answer among `answers`, by answer id, in one query
    (none when nothing waits): for the answer being changed (`editing`, its Change link) with
    its fields open, and a card as a refused edit left it (`refused`) in place of its own."""
    waiting = [answer.pk for answer in answers if _may_wait(answer)]
    shown: dict[int, ApprovalCard] = {}
    if waiting:
        for approval in _waiting().filter(answer_id__in=waiting).order_by("pk"):
            shown.setdefault(
                approval.answer_id, card_of(approval, editing=approval.answer_id == editing)
            )
    if refused is not None:
        shown[refused.answer_id] = refused
    return shown


def _may_wait(answer: Any) -> bool:
    """A paused turn, or an answer that ended showing an app, whose calls may wait after it
    (chat.turns.app_calls): a page without either reads no card."""
    if answer.state == Message.State.WAITING:
        return True
    shown = answer.events if isinstance(answer, TurnView) else ()
    return any(isinstance(event, AppView) for event in shown)


def waiting_card(answer_id: int) -> ApprovalCard | None:
    """The card of the call `answer_id` waits on, if it still waits."""
    approval = _waiting().filter(answer_id=answer_id).order_by("pk").first()
    return card_of(approval) if approval is not None else None


def refused_card(
    conversation_id: Any,
    call_id: str,
    edits: Edits | None,
    refusal: EditRefused,
    *,
    standalone: bool = False,
) -> ApprovalCard | None:
    """The card of a call whose edit was refused, as the owner left it: their text in the
    fields, and why under the field at fault. None if the call no longer waits."""
    approval = (
        ToolApproval.objects.of_call(conversation_id, call_id)
        .waiting()
        .select_related("answer")
        .first()
    )
    if approval is None:
        return None
    return with_refusal(card_of(approval, standalone=standalone), edits, refusal)


def question_cards_for(
    conversation_id: uuid.UUID, changed: uuid.UUID | None = None
) -> list[QuestionCard]:
    """The cards of the conversation's waiting questions, and `changed` whatever its state
    (chat.asks.question_cards)."""
    return cards(conversation_id, changed)
