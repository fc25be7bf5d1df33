"""Text the model or a tool's server wrote, made fit for one line of a feed: no controls (NUL
included: PostgreSQL refuses it), no lone surrogates, no display-reordering controls, one
line, and no longer than its bound."""

from __future__ import annotations

import re
from typing import Any

# C0 and C1 controls (tab and line breaks become spaces first), lone surrogates, and the
# embeddings, overrides, isolates and marks that reorder how text is displayed.
_UNSHOWN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff"
    "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]"
)


def one_line(text: str, limit: int) -> str:
    """`text` on one line without what cannot be shown, cut to `limit` with an ellipsis."""
    text = " ".join(_UNSHOWN.sub("", text.replace("\t", " ")).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fits(value: Any, limit: int) -> bool:
    """Whether the value's JSON is at most about `limit` characters, looking at no more
    than that much of it."""
    left = limit
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
            left -= 2 + 2 * len(item)
        elif isinstance(item, list | tuple):
            stack.extend(item)
            left -= 2 + len(item)
        else:
            left -= len(item) + 2 if isinstance(item, str) else 8
        if left < 0:
            return False
    return True
