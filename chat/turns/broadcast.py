"""What travels over the channel layer to every socket and stream of a conversation."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer

from chat.models import Conversation

if TYPE_CHECKING:
    from chat.turns.admission import StartedTurn

logger = logging.getLogger("glassbox.broadcast")


async def group_send(group: str, message: dict[str, Any]) -> None:
    """Best effort: the database is the record, and every follower fills what it missed from
    it (chat.turns.follow), so a layer that fails (Redis gone, its pool exhausted) costs
    frames, never the turn."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group, message)
    except Exception:
        logger.warning("could not broadcast %s to %s", message.get("type"), group, exc_info=True)


def user_group(user_id: int) -> str:
    """The group every socket of one user joins: told when access ends
    (chat.socket.revocation) and when their list of conversations changes."""
    return f"user-{user_id}"


CONVERSATIONS_CHANGED = "conversations.changed"


async def send_conversations_changed(owner_id: int, conversation_id: Any = None) -> None:
    """The owner's pages of other conversations refresh their sidebar: `conversation_id`
    began, ended a turn, was renamed, archived or deleted (its own page sees its turns)."""
    message = {"type": CONVERSATIONS_CHANGED, "conversation": str(conversation_id or "")}
    await group_send(user_group(owner_id), message)


def turn_started(turn: StartedTurn) -> dict[str, Any]:
    """The message that tells a conversation's sockets a turn began; the socket that asked
    is handed it directly, so it never depends on the layer for its own turn."""
    message: dict[str, Any] = {
        "type": "turn.started",
        "question_id": turn.question.pk,
        "answer_id": turn.answer.pk,
        # The feed's: the lines a socket writes itself (the draft's label) speak it too.
        "language": turn.answer.answer_feed.language,
    }
    if turn.replaces is not None:
        message["replaces"] = turn.replaces
    return message


async def send_turn_started(turn: StartedTurn) -> None:
    await group_send(Conversation.group_name_for(turn.answer.conversation_id), turn_started(turn))


async def send_turn_event(
    group: str,
    *,
    answer_id: int,
    event: dict[str, Any],
    offset: int | None = None,
    unsaved: list[dict[str, Any]] | None = None,
    written: dict[str, int] | None = None,
) -> None:
    """`offset` places a text event in the answer, so a follower can tell a gap; `unsaved`
    are the recorded events before this one that are not in the database yet; with `done`,
    `written` is how much of the turn is stored (its last seq, its text's length), so a
    follower that has it all reads nothing."""
    message: dict[str, Any] = {"type": "turn.event", "answer_id": answer_id, "event": event}
    if offset is not None:
        message["offset"] = offset
    if unsaved:
        message["unsaved"] = unsaved
    if written is not None:
        message["written"] = written
    await group_send(group, message)


class Subscription:
    """A channel of its own in a conversation's group, for a follower that is not a
    consumer (an SSE response)."""

    def __init__(self, layer: Any, channel: str) -> None:
        self.layer = layer
        self.channel = channel
        self._next: asyncio.Future[dict[str, Any]] | None = None

    async def get(self) -> dict[str, Any]:
        # One receive kept across its caller's timeouts: cancelling a layer's receive may
        # lose what arrives meanwhile (channels-redis's pub/sub layer leaves the channel).
        if self._next is None:
            self._next = asyncio.ensure_future(self.layer.receive(self.channel))
        try:
            message = await asyncio.shield(self._next)
        except asyncio.CancelledError:
            raise  # the receive goes on, or holds what came, for the next get
        except Exception:
            self._next = None
            raise
        self._next = None
        return message

    async def close(self) -> None:
        if self._next is not None:
            self._next.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._next
        # A layer that keeps a channel until told (pub/sub) is told; the others expire it.
        forget = getattr(self.layer, "forget_channel", None)
        if forget is not None:
            await forget(self.channel)


@contextlib.asynccontextmanager
async def subscribe(group: str) -> AsyncIterator[Subscription]:
    layer = get_channel_layer()
    assert layer is not None, "the turn API needs a channel layer"
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    subscription = Subscription(layer, channel)
    try:
        yield subscription
    finally:
        await layer.group_discard(group, channel)
        await subscription.close()
