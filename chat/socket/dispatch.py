"""How a socket's messages reach its handlers: in order, one at a time, as in Channels, with
fewer turns of the event loop on the way.

Channels waits on the client and the channel layer with a new task and an `asyncio.wait`
for every message, so a status line took three turns of a busy loop to reach the consumer,
then one more to reach its turn's viewer. Here one long-lived task per source feeds the
consumer's inbox, and a turn's event goes straight from the layer to its viewer when
nothing is queued ahead of it (else it waits its turn in the inbox, so nothing overtakes)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

logger = logging.getLogger("glassbox.socket")

Message = dict[str, Any]


async def dispatch_all(
    *,
    client: Callable[[], Awaitable[Message]],
    layer: Callable[[], Awaitable[Message]] | None,
    dispatch: Callable[[Message], Awaitable[None]],
    direct: Callable[[Message], bool],
) -> None:
    """Handles the client's and the layer's messages until a handler raises (StopConsumer
    ends a socket). `direct` may take a layer message itself when nothing waits before it;
    it returns whether it did."""
    inbox: asyncio.Queue[Message | Exception] = asyncio.Queue()
    # Group messages held while the socket is busy; past it they are dropped as the channel
    # layers drop them (a turn's followers fill what they missed from the database).
    capacity = settings.CHANNEL_CAPACITY

    async def pump(source: Callable[[], Awaitable[Message]], from_layer: bool) -> None:
        try:
            while True:
                message = await source()
                if from_layer:
                    if inbox.empty() and direct(message):
                        continue
                    if inbox.qsize() >= capacity:
                        logger.warning("socket inbox full: a %s was dropped", message.get("type"))
                        continue
                inbox.put_nowait(message)
        except Exception as error:
            inbox.put_nowait(error)  # raised by the consumer in its turn

    pumps = [asyncio.create_task(pump(client, from_layer=False))]
    if layer is not None:
        pumps.append(asyncio.create_task(pump(layer, from_layer=True)))
    try:
        while True:
            message = await inbox.get()
            if isinstance(message, Exception):
                raise message
            await dispatch(message)
    finally:
        for task in pumps:
            task.cancel()
        # Cancelling a pending receive is what tells the Redis layer to forget the channel.
        await asyncio.gather(*pumps, return_exceptions=True)
