"""What travels over the channel layer to every socket of a conversation."""

from __future__ import annotations

from typing import Any

from channels.layers import get_channel_layer


async def group_send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(group, message)


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
