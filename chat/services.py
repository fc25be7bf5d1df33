"""Writes to chat data. Keyword-only, typed, one place for each."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from activity.models import ActivityFeed
from chat.models import Conversation, Message


class TurnRejected(Exception):
    """A turn that cannot start; the message is shown to the user as it is."""


@dataclass(frozen=True, slots=True)
class StartedTurn:
    question: Message
    answer: Message


def conversation_create(*, owner) -> Conversation:
    return Conversation.objects.create(owner=owner)


def turn_start(*, conversation: Conversation, text: str) -> StartedTurn:
    """Saves the question and a streaming answer with its feed, or refuses if a turn of this
    conversation is already running."""
    try:
        with transaction.atomic():
            question = Message.objects.create(
                conversation=conversation, role=Message.Role.USER, content=text
            )
            feed = ActivityFeed.objects.create(owner_id=conversation.owner_id)
            answer = Message.objects.create(
                conversation=conversation,
                role=Message.Role.ASSISTANT,
                state=Message.State.STREAMING,
                feed=feed,
            )
            if not conversation.title:
                conversation.title = Conversation.title_from(text)
                conversation.save(update_fields=["title", "updated_at"])
    except IntegrityError:
        raise TurnRejected(
            "The agent is still working on the previous question. "
            "Wait for it to finish, then ask again."
        ) from None
    return StartedTurn(question=question, answer=answer)
