"""Cursor pages whose cursor is checked: a cursor a client made up is a 400 naming it, never
a database error."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as ModelValidationError
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import Cursor, CursorPagination


class CheckedCursorPagination(CursorPagination):
    page_size = 50

    def decode_cursor(self, request: Any) -> Cursor | None:
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


def _invalid() -> ValidationError:
    return ValidationError({"cursor": "Invalid cursor: use the next or previous link as given."})
