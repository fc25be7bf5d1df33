"""Rows of one model written in one statement, for the turn's hot path.

`bulk_create` builds its INSERT anew on every call, field by field and row by row; with a
turn's few rows that building cost twice what running the statement did (bench/
turn_statements.py). Here the statement is built once per model and database, and each
row's values are prepared by their own fields, as `bulk_create` prepares them. As with
`bulk_create`, no signal is sent and `save()` is not called; unlike it, no primary key comes
back (the turn never reads them)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from django.db import connections, models, router


def insert_rows(rows: Sequence[models.Model]) -> None:
    """Writes `rows`, all of one model with an automatic primary key, in the caller's
    transaction."""
    if not rows:
        return
    model = type(rows[0])
    alias = router.db_for_write(model)
    connection = connections[alias]
    sql, fields = _statement(model, alias)
    values = [
        [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)


@functools.cache
def _statement(model: type[models.Model], alias: str) -> tuple[str, list[models.Field]]:
    quote = connections[alias].ops.quote_name
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    columns = ", ".join(quote(str(field.column)) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})", fields
