"""Sending to a channel layer's group and listening on one: the plumbing under what every
socket and stream of a conversation is told (chat.turns.broadcast) and under a question's
answer taken in another process (chat.asks.elicitations)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from channels.layers import get_channel_layer

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
