"""What every page's frame shows: the inbox badge's count."""

from __future__ import annotations

import functools
from typing import Any

from chat.asks.inbox import waiting_count


def inbox(request: Any) -> dict[str, Any]:
    """The count of what waits for the reader, taken once when the page's frame shows it
    (base.html): the sidebar, fragments and the badge's own poll never read it, so they pay
    no query for it, as with django.contrib.auth's `perms`."""
    return {"inbox_count": functools.cache(lambda: waiting_count(getattr(request, "user", None)))}
