"""The conversation as the model sees it: earlier questions, answers, and tool calls with
their results, trimmed from the oldest turn to the budget."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from activity.selectors import events_by_feed
from chat.agent.memory import trim, turn_messages
from chat.models import Message


def model_history(answer: Message) -> list[dict[str, Any]]:
    """The conversation up to this answer (its question included) as chat messages; in the
    database thread (which every turn and socket of the process shares)."""
    earlier = list(
        # A regenerated answer is no longer what the model said.
        Message.objects.filter(
            conversation_id=answer.conversation_id, id__lt=answer.pk, replaced_by__isnull=True
        )
        .order_by("id")
        .values_list("role", "content", "feed_id")
    )
    rows = events_by_feed((feed for _, _, feed in earlier), kinds=["tool_call", "tool_result"])
    messages: list[dict[str, Any]] = []
    for role, content, feed in earlier:
        events = [row.to_event() for row in rows.get(feed or 0, [])]
        messages += turn_messages(role, content, events)
    return trim(messages, settings.GLASSBOX_HISTORY_CHARS)


amodel_history = database_sync_to_async(model_history)
