"""Channels' in-memory layer, with its expiry sweep kept off the per-message path.

The stock layer walks every channel and every group to expire old messages on each send,
group send and receive: O(open sockets) per message, which made the sweep one of the largest
costs of a process serving hundreds of streams. Messages expire after a minute and group
memberships after a day, so sweeping once a second loses nothing."""

from __future__ import annotations

import contextlib
import time

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer


class SweptInMemoryChannelLayer(InMemoryChannelLayer):
    sweep_every = 1.0
    _swept_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept_at >= self.sweep_every:
            self._swept_at = now
            super()._clean_expired()

    async def group_send(self, group: str, message: dict) -> None:
        """As the stock layer, without a task per member: sending never waits here."""
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self.groups.get(group, ())):
            with contextlib.suppress(ChannelFull):
                await self.send(channel, message)
