"""How much one socket frame may carry: the one place that says it. Daphne serves the socket
with `--websocket-max-frame-size 65536` (the Makefile's DAPHNE_LIMITS); a frame over it ends
the socket with 1011, and a page that reconnects is sent the same frame again. So a long
untrusted value (a server's URL, a tool's argument, a status line) is cut where a frame shows
it, with a mark that says how much is missing; the stored event and the exports keep it whole.
What still does not fit is never sent (chat.socket.consumer sends a frame that says to reload).

Plain Python (and gettext for the mark)."""

from __future__ import annotations

from typing import Any

from django.utils.formats import number_format
from django.utils.translation import ngettext

# Daphne's limit, in bytes of UTF-8 (tests/test_frame_budget.py reads it in the Makefile).
SOCKET_FRAME_LIMIT = 65_536
# What a frame may hold: well under the limit, so a frame's markup around its values (and a
# value HTML-escapes to up to six bytes a character) does not reach it.
FRAME_BUDGET = 48 * 1024
# The characters of one untrusted value a frame shows.
VALUE_LIMIT = 4_000
# A program's text frame carries at most this many characters of the answer: at six bytes a
# character (JSON's \u escapes), well within the budget.
TEXT_PIECE = 7_000


def size_of(frame: str) -> int:
    """Bytes on the wire ("surrogatepass": a lone surrogate is counted, not an error)."""
    return len(frame.encode("utf-8", "surrogatepass"))


def fits(frame: str) -> bool:
    return size_of(frame) <= FRAME_BUDGET


def cut_long(text: str, limit: int = VALUE_LIMIT) -> str:
    """`text`, or its start and a mark saying how many characters were left out."""
    if len(text) <= limit:
        return text
    more = len(text) - limit
    mark = ngettext(
        "(cut: %(count)s more character)", "(cut: %(count)s more characters)", more
    ) % {"count": number_format(more, force_grouping=True)}
    return f"{text[:limit]}… {mark}"


# Deeper than this, a value is left as it is (the frame's size is still checked when sent):
# a model's arguments may nest as deep as the JSON decoder went.
DEPTH = 32


def cut_values(value: Any, limit: int = VALUE_LIMIT, depth: int = 0) -> Any:
    """A JSON value with every string in it (keys too) cut to `limit`."""
    if isinstance(value, str):
        return cut_long(value, limit)
    if depth >= DEPTH:
        return value
    if isinstance(value, list):
        return [cut_values(item, limit, depth + 1) for item in value]
    if isinstance(value, dict):
        return {cut_long(k, limit): cut_values(v, limit, depth + 1) for k, v in value.items()}
    return value


def text_pieces(text: str, piece: int = TEXT_PIECE) -> list[str]:
    """Answer text in pieces a frame can carry, in order (never cut: it is the answer)."""
    return [text[start : start + piece] for start in range(0, len(text), piece)] or [text]
