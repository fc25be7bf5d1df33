"""channels-redis's pub/sub channel layer between processes (REDIS_URL), with what it lacked
here; a module of its own so that a process on the in-memory layer (project.layers) never
imports Redis's client."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from channels_redis import pubsub
from channels_redis.utils import _wrap_close
from redis.exceptions import ConnectionError as RedisConnectionError

from project.queues import SlimQueue

logger = logging.getLogger("glassbox.layers")


class RedisPubSubChannelLayer(pubsub.RedisPubSubChannelLayer):
    """channels-redis's pub/sub layer (a group message is one PUBLISH, which each process
    routes to its own sockets), with the changes its tests found wanting here:

    - joining a group returns once Redis has confirmed the subscription, so a message
      published from anywhere after `group_add` returns reaches the new member;
    - its reader waits for the first subscription instead of polling every 0.1 s, which
      delayed a fresh process's first frames past the end of a fast turn;
    - each channel holds at most `capacity` messages and drops the rest, as the other layers
      do (followers fill drops from the database): a consumer that stops reading cannot make
      the process buffer without limit, and an overflow no longer stalls the reader for a
      second;
    - a publish that fails on a connection Redis closed (it restarted) is sent once more on
      a fresh one, instead of being lost: the first of every process after a restart was;
    - the publishes asked for while one is on its way leave together, in one pipeline.
      The stock shard sent them one at a time under its lock, a round trip each, so in a busy
      process a status line waited behind every other turn's frames: 45 ms (p50) between
      a line being numbered and published at 18 turns a second."""

    def __init__(self, *args: Any, capacity: int = 100, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.capacity = capacity

    def _get_layer(self) -> _LoopLayer:
        loop = asyncio.get_running_loop()
        layer = self._layers.get(loop)
        if layer is None:
            layer = _LoopLayer(*self._args, **self._kwargs, channel_layer=self)
            self._layers[loop] = layer
            _wrap_close(self, loop)
        return layer

    async def forget_channel(self, channel: str) -> None:
        """Leave a channel no one will read again (a follower that is not a consumer): the
        stock layer only does so when a pending receive is cancelled."""
        await self._get_layer().forget_channel(channel)


class _LoopLayer(pubsub.RedisPubSubLoopLayer):
    def __init__(self, *args: Any, channel_layer: RedisPubSubChannelLayer, **kwargs: Any) -> None:
        super().__init__(*args, channel_layer=channel_layer, **kwargs)
        self.capacity = channel_layer.capacity
        self._shards: list[_Shard] = [_Shard(shard.host, self) for shard in self._shards]

    async def _subscribe_to_channel(self, channel: str) -> None:
        self.channels[channel] = SlimQueue(maxsize=self.capacity)
        await self._get_shard(channel).subscribe(channel)

    async def forget_channel(self, channel: str) -> None:
        if self.channels.pop(channel, None) is not None:
            await self._get_shard(channel).unsubscribe(channel)


class _Shard(pubsub.RedisSingleShardConnection):
    # How long joining waits for Redis to confirm; past it the member joins unconfirmed, as
    # the stock layer always does.
    confirm_within = 5.0

    def __init__(self, host: dict[str, Any], channel_layer: _LoopLayer) -> None:
        super().__init__(host, channel_layer)
        self._confirmations: dict[str, asyncio.Future[None]] = {}
        self._listening = asyncio.Event()
        self._outbox: list[tuple[str, bytes, asyncio.Future[None]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def publish(self, channel: str, message: bytes) -> None:
        """Returns once Redis has taken the message; in the order publishes were asked for."""
        published = asyncio.get_running_loop().create_future()
        self._outbox.append((channel, message, published))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_outbox())
        await published

    async def _send_outbox(self) -> None:
        while self._outbox:
            batch, self._outbox = self._outbox, []
            try:
                try:
                    await self._publish(batch)
                except RedisConnectionError:
                    # Redis restarted: every connection idle in the pool died with it, and
                    # the first publish after it fails on one of them. Once more on a fresh
                    # connection, the other dead ones closed too. (A publish Redis took
                    # before the connection broke goes twice: followers drop repeats.)
                    await self._publish(batch, fresh=True)
            except Exception as problem:
                for _, _, published in batch:
                    if not published.done():
                        published.set_exception(problem)
            else:
                for _, _, published in batch:
                    if not published.done():
                        published.set_result(None)

    async def _publish(
        self, batch: list[tuple[str, bytes, asyncio.Future[None]]], *, fresh: bool = False
    ) -> None:
        async with self._lock:
            self._ensure_redis()
            if fresh:
                # Only the idle ones: the subscriptions' connection reconnects by itself.
                await self._redis.connection_pool.disconnect(inuse_connections=False)
            pipeline = self._redis.pipeline(transaction=False)
            for channel, message, _ in batch:
                pipeline.publish(channel, message)
            await pipeline.execute()

    async def subscribe(self, channel: str) -> None:
        async with self._lock:
            if channel not in self._subscribed_to:
                self._ensure_redis()
                self._ensure_receiver()
                loop = asyncio.get_running_loop()
                self._confirmations.setdefault(channel, loop.create_future())
                await self._pubsub.subscribe(channel)
                self._subscribed_to.add(channel)
                self._listening.set()
            confirmed = self._confirmations.get(channel)
        if confirmed is not None:
            # Shielded: one member giving up must not cancel the others' wait.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.confirm_within):
                    await asyncio.shield(confirmed)

    async def flush(self) -> None:
        await super().flush()
        self._confirmations.clear()
        self._listening.clear()

    async def _do_receiving(self) -> None:
        failures = 0
        while True:
            try:
                if not (self._pubsub and self._pubsub.subscribed):
                    self._listening.clear()
                    await self._listening.wait()
                    continue
                message = await self._pubsub.get_message(timeout=1.0)
                failures = 0
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    self._confirmed(message["channel"])
                elif message["type"] == "message":
                    self._receive_message(message)
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception:
                logger.exception("Unexpected exception in receive task")
                # The next read reconnects and subscribes again: at once after a restart of
                # Redis (what is published meanwhile is lost to this process), then less
                # and less often while it stays away.
                await asyncio.sleep(min(1.0, 0.05 * 2**failures))
                failures += 1

    def _confirmed(self, channel: bytes | str) -> None:
        name = channel.decode() if isinstance(channel, bytes) else channel
        confirmed = self._confirmations.pop(name, None)
        if confirmed is not None and not confirmed.done():
            confirmed.set_result(None)

    def _receive_message(self, message: dict[str, Any]) -> None:
        name = message["channel"]
        name = name.decode() if isinstance(name, bytes) else name
        layer = self.channel_layer
        members = layer.groups.get(name, (name,))
        for member in members:
            queue = layer.channels.get(member)
            if queue is not None:
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(message["data"])
