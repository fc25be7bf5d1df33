"""What people type is checked the same way on every route (socket, forms, search, API):
text a database cannot store is refused, text that only looks like something is refused, and
the controls that reorder how text is displayed are kept out of titles."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.utils.translation import gettext as _

# Explicit embeddings, overrides and isolates, and the direction marks: in a title they can
# make "invoice \u202efdp.exe" show as "invoice exe.pdf".
BIDI_CONTROLS = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                                   "\u200e\u200f\u061c"))  # fmt: skip


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: Any) -> Any:
    """A value as a database stores it: no NUL (PostgreSQL refuses one in text and jsonb)
    and no lone surrogate, in strings and in JSON's keys and strings alike; the rest as it
    was. For what the model, a tool or a server wrote, which is kept, not refused."""
    if isinstance(value, str):
        return _UNSTORABLE.sub(lambda found: "" if found[0] == "\x00" else "\ufffd", value)
    if isinstance(value, list):
        return [storable(item) for item in value]
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    return value


def unstorable(text: str) -> str | None:
    """Why the database could not store this text (PostgreSQL refuses NUL, SQLite a lone
    surrogate), or None."""
    if "\x00" in text:
        return _("The text holds a NUL character, which cannot be stored; remove it.")
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        return _("The text holds a broken character (a lone surrogate); remove it.")
    return None


def looks_empty(text: str) -> bool:
    """Nothing a person could see: only spaces and invisible format characters."""
    return all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text)


def without_bidi_controls(text: str) -> str:
    return text.translate(BIDI_CONTROLS)
