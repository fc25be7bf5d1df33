"""What travels over the channel layer to every socket of a conversation."""

from __future__ import annotations

import logging
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger("glassbox.broadcast")


async def group_send(group: str, message: dict[str, Any]) -> None:
    """Best effort: the database is the record, and every client fills what it missed from
    it (chat.follow), so a layer that fails (Redis gone, its pool exhausted) costs frames,
    never the turn."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group, message)
    except Exception:
        logger.warning("could not broadcast %s to %s", message.get("type"), group, exc_info=True)


async def send_turn_started(group: str, *, question_id: int, answer_id: int) -> None:
    await group_send(
        group, {"type": "turn.started", "question_id": question_id, "answer_id": answer_id}
    )


async def send_turn_event(
    group: str, *, answer_id: int, event: dict[str, Any], **extra: Any
) -> None:
    await group_send(
        group, {"type": "turn.event", "answer_id": answer_id, "event": event, **extra}
    )
