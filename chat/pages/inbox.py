"""The inbox: everything that waits for the user, across conversations, answerable here from
any tab or device; the turn goes on wherever it runs (chat.asks.approvals)."""

from __future__ import annotations

import dataclasses

from asgiref.sync import async_to_sync
from django.contrib import messages as flash
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chat import turns
from chat.asks.approval_cards import ApprovalCard
from chat.asks.cards import refused_card
from chat.asks.inbox import WaitingItem, waiting_count, waiting_items
from chat.conversations import selectors
from chat.turns import actions


@require_GET
def inbox(request):
    return _inbox_page(request)


@require_GET
def inbox_badge(request):
    return render(request, "chat/_inbox_badge.html", {"count": waiting_count(request.user)})


@require_POST
def inbox_act(request, conversation_id):
    """An answer from the inbox: the conversation's own fields and rules
    (chat.turns.actions), then the inbox again."""
    conversation = selectors.conversation_for(request.user, conversation_id)
    try:
        action = actions.read_posted(request.POST)
        if not isinstance(action, actions.Decide):
            raise actions.Unreadable(_("The inbox only approves and denies."))
        async_to_sync(actions.perform)(
            action, conversation=conversation, user=request.user, language=request.LANGUAGE_CODE
        )
    except actions.Unreadable as problem:
        return _refused(request, str(problem), 400)
    except turns.EditRefused as refusal:
        assert isinstance(action, actions.Decide)
        card = refused_card(
            conversation.pk, action.call_id, action.edits, refusal, standalone=True
        )
        return _refused(request, str(refusal), refusal.status, card)
    except turns.TurnRejected as refusal:
        return _refused(request, str(refusal), refusal.status)
    flash.success(request, _("Decided: the conversation goes on."))
    return redirect("chat:inbox")


def _refused(request, text: str, status: int, card: ApprovalCard | None = None):
    flash.error(request, text)
    return _inbox_page(request, status=status, refused=card)


def _inbox_page(request, status: int = 200, refused: ApprovalCard | None = None):
    # The card whose arguments are being changed (its Change link), or left by a refused edit.
    changing = request.GET.get("change", "")
    items = [_shown(item, changing, refused) for item in waiting_items(request.user)]
    return render(request, "chat/inbox.html", {"items": items}, status=status)


def _shown(item: WaitingItem, changing: str, refused: ApprovalCard | None) -> WaitingItem:
    card = item.card
    if not isinstance(card, ApprovalCard):
        return item
    if refused is not None and refused.answer_id == card.answer_id:
        return dataclasses.replace(item, card=refused)
    if changing == str(card.answer_id) and card.editable:
        return dataclasses.replace(item, card=dataclasses.replace(card, editing=True))
    return item
