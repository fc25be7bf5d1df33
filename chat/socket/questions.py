"""The cards of an MCP server's questions on a socket: the conversation's waiting questions,
all of them at every change (so a second device, a reload and a change all show the record as
it is), sent as the socket's wire says (chat.socket.wires)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from channels.db import database_sync_to_async

from chat.asks.cards import question_cards_for
from chat.asks.question_cards import QuestionCard


async def waiting(
    conversation_id: uuid.UUID,
    *,
    changed: uuid.UUID | None = None,
    guard: Callable[[], None] | None = None,
) -> list[QuestionCard] | None:
    """The cards now, in one trip that checks the socket's right first (`guard` raises);
    None when there is nothing to show and nothing changed."""

    def read() -> list[QuestionCard]:
        if guard is not None:
            guard()
        return question_cards_for(conversation_id, changed)

    shown = await database_sync_to_async(read)()
    if not shown and changed is None:
        return None
    return shown
