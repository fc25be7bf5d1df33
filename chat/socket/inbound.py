"""What a socket accepts from its page: JSON objects whose fields make a request
(chat.turns.actions reads them), and not too many of them."""

from __future__ import annotations

import time
from collections import deque

from django.utils.translation import gettext as _

from chat.turns.actions import Request, Unreadable, decode, read

FLOOD_LIMIT = 20
FLOOD_WINDOW = 10.0


def parse(text_data: str | None) -> Request:
    if text_data is None:
        raise Unreadable(_("Send your question as text."))
    return read(decode(text_data))


class FloodGuard:
    """More than FLOOD_LIMIT messages in FLOOD_WINDOW seconds is a flood."""

    # Made by the first message: most sockets of open tabs never send one.
    recent: deque[float] | None = None

    def flooded(self) -> bool:
        now = time.monotonic()
        if self.recent is None:
            self.recent = deque()
        self.recent.append(now)
        while self.recent and self.recent[0] < now - FLOOD_WINDOW:
            self.recent.popleft()
        return len(self.recent) > FLOOD_LIMIT
