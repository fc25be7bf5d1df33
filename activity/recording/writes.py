"""A running turn's writes (its events, model calls and text at each group commit, the beat
itself, the end), in statements built once per model, database and set of columns.

`bulk_create` and `update()` build their statement anew on every call, field by field and row
by row; with a turn's few rows that building cost twice what running the statement did
(bench/turn_statements.py). Each value is prepared by its own field, as they prepare it. As
with them, no signal is sent and `save()` is not called; unlike `bulk_create`, no primary key
comes back (the turn never reads them)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

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


def update_row(model: type[models.Model], pk: Any, values: Mapping[str, Any], **where: Any) -> int:
    """Sets `values` on the row `pk` of `model` if its columns also equal `where`, in the
    caller's transaction; the number of rows changed (0 or 1)."""
    alias = router.db_for_write(model)
    connection = connections[alias]
    sql, fields, conditions = _update(model, alias, tuple(values), tuple(where))
    params = [field.get_db_prep_save(values[field.name], connection) for field in fields]
    params += [
        field.get_db_prep_value(where.get(field.name, pk), connection) for field in conditions
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def update_rows(model: type[models.Model], rows: Sequence[tuple[Any, Mapping[str, Any]]]) -> None:
    """Sets each row's values (the same columns for all) in one statement, in the caller's
    transaction."""
    if not rows:
        return
    alias = router.db_for_write(model)
    connection = connections[alias]
    sql, fields, conditions = _update(model, alias, tuple(rows[0][1]), ())
    (pk_field,) = conditions
    params = [
        [
            *(field.get_db_prep_save(values[field.name], connection) for field in fields),
            pk_field.get_db_prep_value(pk, connection),
        ]
        for pk, values in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


@functools.cache
def _update(
    model: type[models.Model], alias: str, names: tuple[str, ...], where: tuple[str, ...]
) -> tuple[str, list[models.Field], list[models.Field]]:
    quote = connections[alias].ops.quote_name
    meta = model._meta
    fields = [_field(model, name) for name in names]
    conditions = [meta.pk, *(_field(model, name) for name in where)]
    assigned = ", ".join(f"{quote(str(field.column))} = %s" for field in fields)
    matched = " AND ".join(f"{quote(str(field.column))} = %s" for field in conditions)
    return f"UPDATE {quote(meta.db_table)} SET {assigned} WHERE {matched}", fields, conditions


def _field(model: type[models.Model], name: str) -> models.Field:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field), f"{name} is not a column of {model.__name__}"
    return field
