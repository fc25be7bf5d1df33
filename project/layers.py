"""The channel layers: Channels' in-memory one for a single process, here, and channels-redis's
pub/sub one between processes (project.redis_layer: a process on this one never imports
Redis's client, about 20 MiB), each with what it lacked here.

The stock in-memory layer walks every channel and every group to expire old messages on each send,
group send and receive: O(open sockets) per message, which made the sweep one of the largest
costs of a process serving hundreds of streams. Messages expire after a minute and group
memberships after a day, so sweeping once a second loses nothing. It also builds a queue for
every message sent or received (to throw it away when the channel has one) and copies each
message with deepcopy; here a queue is built only for a channel without one, and the JSON-shaped
messages sockets get are copied by `copied`, to the same result."""

from __future__ import annotations

import asyncio
import contextlib
import time
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

from project.queues import SlimQueue


class SweptInMemoryChannelLayer(InMemoryChannelLayer):
    # A slim queue per channel, not an asyncio.Queue (project.queues: what it saves a socket).
    channels: dict[str, SlimQueue[tuple[float, dict[str, Any]]]]  # type: ignore[assignment]
    sweep_every = 1.0
    # Memberships last a day (group_expiry): their walk, over every member of every group
    # (three or four a socket), needs to run only once a minute for that. Each second it held
    # the loop 7 ms at 5,000 quiet sockets.
    memberships_every = 60.0
    _swept_at = 0.0
    _memberships_swept_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept_at < self.sweep_every:
            return
        self._swept_at = now
        self._expire_messages()
        if now - self._memberships_swept_at >= self.memberships_every:
            self._memberships_swept_at = now
            self._expire_memberships()

    def _expire_messages(self) -> None:
        """As the stock layer: an expired message is dropped, and its channel leaves its
        groups (and goes, once empty)."""
        now = time.time()
        for channel, queue in list(self.channels.items()):
            while queue._queue and queue._queue[0][0] < now:
                queue.get_nowait()
                self._remove_from_groups(channel)  # type: ignore[attr-defined]
                if queue.empty():
                    self.channels.pop(channel, None)

    def _expire_memberships(self) -> None:
        oldest = int(time.time()) - self.group_expiry
        for members in self.groups.values():
            for name, joined in list(members.items()):
                if joined and joined < oldest:
                    members.pop(name, None)

    async def send(self, channel: str, message: dict) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        try:
            self._put(channel, message, time.time() + self.expiry)
        except asyncio.QueueFull:
            raise ChannelFull(channel) from None

    async def receive(self, channel: str) -> dict:
        self.require_valid_channel_name(channel)
        self._clean_expired()
        queue = self._queue(channel)
        try:
            _, message = await queue.get()
        finally:
            # As the stock layer: a channel nobody waits on and with nothing queued is let go.
            if queue.empty() and self.channels.get(channel) is queue:
                del self.channels[channel]
        return message

    def _queue(self, channel: str) -> SlimQueue[tuple[float, dict[str, Any]]]:
        queue = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = SlimQueue(maxsize=self.get_capacity(channel))
        return queue

    def _put(self, channel: str, message: dict, expires: float) -> None:
        """Its own copy of `message` on the channel's queue; raises QueueFull at capacity."""
        self._queue(channel).put_nowait((expires, copied(message)))

    async def group_send(self, group: str, message: dict) -> None:
        """As the stock layer, without a task per member: sending never waits here. Each
        member's name was checked as it joined, so it is not checked again per message."""
        assert isinstance(message, dict), "Message is not a dict"
        assert "__asgi_channel__" not in message
        self.require_valid_group_name(group)
        self._clean_expired()
        expires = time.time() + self.expiry
        for channel in list(self.groups.get(group, ())):
            with contextlib.suppress(asyncio.QueueFull):
                self._put(channel, message, expires)


_SHARED = (str, int, float, bool, type(None), bytes)


def copied(value: Any) -> Any:
    """What deepcopy returns for a message made of dicts, lists, text and numbers, at a
    fraction of its cost; anything else goes through deepcopy."""
    kind = type(value)
    if kind is dict:
        return {key: copied(item) for key, item in value.items()}
    if kind is list:
        return [copied(item) for item in value]
    if kind in _SHARED:
        return value
    return deepcopy(value)
