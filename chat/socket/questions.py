"""The cards of an MCP server's questions on a socket: the conversation's waiting questions
as one fragment that replaces the page's `#questions` (so a second device, a reload and a
change all show the record as it is), or one JSON event for programs."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from chat.asks.cards import question_cards_for
from chat.asks.question_cards import QuestionCard
from chat.socket.render import json_frame


def frame_of(conversation_id: uuid.UUID, shown: list[QuestionCard], *, as_json: bool) -> str:
    if as_json:
        return json_frame({"type": "questions", "questions": [c.to_json() for c in shown]})
    return render_to_string(
        "chat/_questions.html",
        {"questions": shown, "conversation_id": conversation_id, "oob": True},
    )


async def frame(
    conversation_id: uuid.UUID,
    *,
    as_json: bool,
    changed: uuid.UUID | None = None,
    guard: Callable[[], None] | None = None,
) -> str | None:
    """The cards now, in one trip that checks the socket's right first (`guard` raises);
    None when there is nothing to show and nothing changed."""

    def read() -> list[QuestionCard]:
        if guard is not None:
            guard()
        return question_cards_for(conversation_id, changed)

    shown = await database_sync_to_async(read)()
    if not shown and changed is None:
        return None
    return frame_of(conversation_id, shown, as_json=as_json)
