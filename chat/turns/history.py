"""The conversation as the model sees it: earlier questions, answers, and tool calls with
their results, trimmed from the oldest turn to the budget."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db.models import QuerySet

from activity.selectors import events_by_feed
from chat.agent.memory import trim, turn_messages
from chat.models import Conversation, Message
from project.sql import Compiled, Param


def model_history(answer: Message) -> list[dict[str, Any]]:
    """The conversation up to this answer (its question included) as chat messages; in the
    database thread (which every turn and socket of the process shares)."""
    earlier = _EARLIER.fetchall(conversation=answer.conversation_id, answer=answer.pk)
    rows = events_by_feed((feed for _, _, feed in earlier), kinds=["tool_call", "tool_result"])
    messages: list[dict[str, Any]] = []
    for role, content, feed in earlier:
        events = [row.to_event() for row in rows.get(feed or 0, [])]
        messages += turn_messages(role, content, events)
    return trim(messages, settings.GLASSBOX_HISTORY_CHARS)


amodel_history = database_sync_to_async(model_history)


def _earlier() -> QuerySet[Message, tuple[str, str, int | None]]:
    """Built once (project.sql): every question reads it before the model is asked, in the
    database thread a burst of questions queues in, and the ORM took longer to build it
    than SQLite to run it."""
    return (
        # A regenerated answer is no longer what the model said.
        Message.objects.filter(
            conversation_id=Param("conversation", Conversation._meta.pk),
            id__lt=Param("answer", Message._meta.pk),
            replaced_by__isnull=True,
        )
        .order_by("id")
        .values_list("role", "content", "feed_id")
    )


_EARLIER = Compiled(_earlier)
