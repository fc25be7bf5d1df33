"""Cursor pages whose cursor is checked: a cursor a client made up is a 400 naming it, never
a database error."""

from __future__ import annotations

from base64 import b64decode
from typing import Any
from urllib.parse import parse_qs

from django.core.exceptions import ValidationError as ModelValidationError
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import Cursor, CursorPagination

# A cursor this API writes is an offset, a direction and one position (an id or a time):
# well under this many characters.
CURSOR_LIMIT = 200
# What DRF writes into a cursor (offset, reverse, position): a cursor it wrote has one or more.
CURSOR_KEYS = frozenset({"o", "r", "p"})


class CheckedCursorPagination(CursorPagination):
    page_size = 50

    def decode_cursor(self, request: Any) -> Cursor | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded and not _written_by_drf(encoded):
            raise _invalid()
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise _invalid() from None
        if cursor is None or cursor.position is None:
            return cursor
        field = self.queryset_model._meta.get_field(self.ordering[0].lstrip("-"))
        try:
            field.to_python(cursor.position)
        except (ModelValidationError, ValueError, OverflowError):
            raise _invalid() from None
        return cursor

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        # decode_cursor needs the model to check a position against its field.
        self.queryset_model = queryset.model
        return super().paginate_queryset(queryset, request, view)


def _written_by_drf(encoded: str) -> bool:
    """DRF reads any base64 as a cursor, text that decodes to none of its keys as the first
    page: a made-up cursor would be a 200."""
    if len(encoded) > CURSOR_LIMIT:
        return False
    try:
        tokens = parse_qs(
            b64decode(encoded.encode("ascii")).decode("ascii"), keep_blank_values=True
        )
    except (ValueError, UnicodeError):
        return True  # DRF's own decoding refuses it, in the same words
    return bool(tokens) and set(tokens) <= CURSOR_KEYS


def _invalid() -> ValidationError:
    return ValidationError({"cursor": "Invalid cursor: use the next or previous link as given."})
