"""What a socket accepts from its page: JSON objects whose fields make a request
(chat.turns.actions reads them), and not too many of them."""

from __future__ import annotations

import json
import time
from collections import deque

from django.utils.translation import gettext as _

from chat.turns.actions import Request, Unreadable, read

FLOOD_LIMIT = 20
FLOOD_WINDOW = 10.0


def parse(text_data: str | None) -> Request:
    if text_data is None:
        raise Unreadable(_("Send your question as text."))
    try:
        data = json.loads(text_data)
    except ValueError:
        raise Unreadable(_("That message could not be read (it was not JSON).")) from None
    if not isinstance(data, dict):
        raise Unreadable(_("That message could not be read (expected a JSON object)."))
    return read(data)


class FloodGuard:
    """More than FLOOD_LIMIT messages in FLOOD_WINDOW seconds is a flood."""

    def __init__(self) -> None:
        self.recent: deque[float] = deque()

    def flooded(self) -> bool:
        now = time.monotonic()
        self.recent.append(now)
        while self.recent and self.recent[0] < now - FLOOD_WINDOW:
            self.recent.popleft()
        return len(self.recent) > FLOOD_LIMIT
