"""Request bodies are read as the socket reads its messages (chat.turns.actions.decode):
nesting too deep, NaN and what is not JSON are a 400 in the same words."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError

# get_encoding refuses bytes-to-bytes codecs; the stubs do not list it yet.
from rest_framework.parsers import JSONParser, get_encoding  # type: ignore[attr-defined]

from chat.turns import actions


class RequestParser(JSONParser):
    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        encoding = get_encoding(parser_context or {})
        try:
            return actions.decode(stream.read(), encoding)
        except actions.Unreadable as problem:
            raise ParseError(str(problem)) from None
