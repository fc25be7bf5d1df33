"""What a socket reads from the database: once when it opens, once per new turn."""

from __future__ import annotations

import uuid
from typing import Any

from channels.db import database_sync_to_async

from activity.models import FeedPreferences
from activity.preferences import FeedPrefs
from chat.models import Conversation, Message
from chat.selectors import TurnView
from chat.turns.recovery import dead_turns_recover


@database_sync_to_async
def opening(
    user: Any, conversation_id: uuid.UUID
) -> tuple[Conversation, FeedPrefs, str, int | None] | None:
    """All a new socket reads, in one trip to the database thread: a reconnect storm (every
    page of a restarted server at once) queues there, so each socket must take one turn."""
    conversation = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conversation is None:
        return None
    dead_turns_recover(conversation_id=conversation.pk)
    prefs, language = FeedPreferences.settings_for(user.pk)
    running = (
        Message.objects.filter(conversation=conversation, state=Message.State.STREAMING)
        .values_list("pk", flat=True)
        .first()
    )
    return conversation, prefs, language, running


@database_sync_to_async
def new_turn(question_id: int, answer_id: int) -> tuple[Message, TurnView]:
    messages = {
        m.pk: m
        for m in Message.objects.select_related("feed", "conversation").filter(
            pk__in=[question_id, answer_id]
        )
    }
    question = messages[question_id]
    question.conversation.display_title  # noqa: B018 - read here, where the database may be used
    answer = TurnView(
        message=messages[answer_id],
        content="",
        events=[],
        lines=[],
        question=question.content,
        question_id=question.pk,
    )
    return question, answer
