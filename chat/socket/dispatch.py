"""How a socket's messages reach its handlers: in order, one at a time, as in Channels, with
fewer turns of the event loop on the way.

Channels waits on the client and the channel layer with a new task and an `asyncio.wait`
for every message, so a status line took three turns of a busy loop to reach the consumer,
then one more to reach its turn's viewer. Here one long-lived task per source feeds the
consumer's inbox, and a turn's event goes straight from the layer to its viewer when
nothing is queued ahead of it (else it waits its turn in the inbox, so nothing overtakes)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from asgiref.typing import WebSocketDisconnectEvent
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from project.queues import SlimQueue

logger = logging.getLogger("glassbox.socket")

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Clock:
    """Work a socket does from time to time beside its messages: `aside()` runs `every()`
    seconds after the last one ended, holding up none of them; the message it returns, if
    any, is then handled in order with the others."""

    every: Callable[[], float]
    aside: Callable[[], Coroutine[Any, Any, Message | None]]


async def dispatch_all(
    *,
    client: Callable[[], Awaitable[Message]],
    layer: Callable[[], Awaitable[Message]] | None,
    dispatch: Callable[[Message], Awaitable[None]],
    direct: Callable[[Message], bool],
    clock: Clock | None = None,
) -> None:
    """Handles the client's and the layer's messages until a handler raises (StopConsumer
    ends a socket). `direct` may take a layer message itself when nothing waits before it;
    it returns whether it did. `clock`, if given, is a third source: work the socket does
    from time to time (a timer between runs, not a task: a quiet socket keeps one), whose
    message is handled in order with the others."""
    inbox: SlimQueue[Message | Exception] = SlimQueue()
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
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle | None = None
    aside: asyncio.Task[Message | None] | None = None

    def tick(clock: Clock) -> None:
        nonlocal aside
        aside = loop.create_task(clock.aside())
        aside.add_done_callback(functools.partial(ended, clock))

    def ended(clock: Clock, task: asyncio.Task[Message | None]) -> None:
        nonlocal timer
        if task.cancelled():
            return
        if task.exception() is not None:
            logger.error("a socket's clock failed", exc_info=task.exception())
        elif (message := task.result()) is not None:
            inbox.put_nowait(message)
        timer = loop.call_later(clock.every(), tick, clock)

    if clock is not None:
        timer = loop.call_later(clock.every(), tick, clock)
    try:
        while True:
            message = await inbox.get()
            if isinstance(message, Exception):
                raise message
            await dispatch(message)
    finally:
        if timer is not None:
            timer.cancel()
        if aside is not None:
            aside.cancel()
        for task in pumps:
            task.cancel()
        # Cancelling a pending receive is what tells the Redis layer to forget the channel.
        await asyncio.gather(*pumps, return_exceptions=True)


class DirectConsumer(AsyncWebsocketConsumer):
    """Channels' WebSocket consumer, its messages dispatched by `dispatch_all`; a subclass
    says in `direct` which layer messages it takes at once."""

    async def __call__(self, scope, receive, send) -> None:
        self.scope = scope
        channel_layer = get_channel_layer(self.channel_layer_alias)
        layer = None
        if channel_layer is not None:
            self.channel_layer = channel_layer
            self.channel_name = await channel_layer.new_channel()
            layer = functools.partial(channel_layer.receive, self.channel_name)
        self.base_send = send
        with contextlib.suppress(StopConsumer):
            await dispatch_all(
                client=receive,
                layer=layer,
                dispatch=self.dispatch,
                direct=self.direct,
                clock=self.clock(),
            )

    def direct(self, message: Message) -> bool:
        """Handles `message` now, if it can, and says whether it did."""
        return False

    def clock(self) -> Clock | None:
        """The message the socket gives itself from time to time, if it takes any."""
        return None

    async def dispatch(self, message: Message) -> None:
        """As Channels' own, without its trip to the database thread before every message
        to close stale connections: a turn sends each socket dozens of group messages, and
        a consumer that reaches the database only through `database_sync_to_async` (which
        closes them itself) or the async ORM needs none."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def websocket_disconnect(self, message: WebSocketDisconnectEvent) -> None:
        """As Channels' own, without its trip to close stale connections (see `dispatch`)."""
        for group in self.groups:
            await self.channel_layer.group_discard(group, self.channel_name)
        await self.disconnect(message["code"])
        raise StopConsumer()
