"""The one home of the statements Glassbox does not let the ORM build on every call.

Where the ORM took far longer to build a statement than the database to run it, on a path
every message, socket or turn takes (bench/hand_sql.py, bench/turn_statements.py), the
statement is built once per database and reused:

- a read is a queryset compiled once (`Compiled`), its changing values marked by `Param`,
  so the managers' rules (a deleted conversation is no conversation), the joins and the
  ordering come from the models as they do for any other query;
- the group commit's INSERT and UPDATE (`insert_statement`, `update_statement`), and the
  INSERT of a question's rows (`insert_row`), have no queryset to compile from: they are
  written here, from the models' fields, and each has a test running it next to its ORM
  twin (`bulk_create`, `create()`, `update()`, `bulk_update`) on SQLite and PostgreSQL
  (tests/test_hand_sql.py); they are run here too (`insert_rows`, `update_row`,
  `update_rows`), the one home of statement executors.

The plumbing imports no app: the models come in as arguments."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections, models, router
from django.db.models import Expression, QuerySet


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where a Param's value goes among a compiled statement's parameters."""

    name: str
    field: models.Field


class Param(Expression):
    """A value given anew each time a compiled statement runs, prepared for the database by
    `field` as the ORM prepares a lookup's value."""

    def __init__(self, name: str, field: models.Field) -> None:
        super().__init__(output_field=field)
        self.name = name

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        return "%s", (_Slot(self.name, self.output_field),)


class Compiled:
    """A read built by the ORM once per database: `queryset()` is called at the first run
    (the models are ready then) and its SQL kept; each run fills the Params in."""

    def __init__(
        self,
        queryset: Callable[[], QuerySet[Any]],
        *,
        exists: bool = False,
        converted: bool = False,
    ) -> None:
        self._queryset = queryset
        self._exists = exists  # as QuerySet.exists() asks: one row or none, no columns
        # Rows as the ORM hands them (datetimes, UUIDs, JSON decoded), not as the driver does.
        self._converted = converted
        self._compiled: dict[str, tuple[str, tuple[Any, ...]]] = {}
        self._converters: dict[str, dict[int, tuple[list[Any], Any]]] = {}

    def sql(self, using: str = "default") -> tuple[str, tuple[Any, ...]]:
        """The statement and its parameters, Params still unfilled (also for EXPLAIN)."""
        compiled = self._compiled.get(using)
        if compiled is None:  # two threads may both compile it: the same statement
            query = self._queryset().query
            if self._exists:
                query = query.exists()
            compiler = query.get_compiler(using=using)
            sql, params = compiler.as_sql()
            # The converters the ORM would run on each column (its results_iter).
            columns = [column[0] for column in compiler.select[: compiler.col_count]]
            self._converters[using] = compiler.get_converters(columns) if self._converted else {}
            compiled = self._compiled[using] = (sql, tuple(params))
        return compiled

    def fetchone(self, using: str = "default", **values: Any) -> tuple[Any, ...] | None:
        """The first row, in the caller's transaction; `values` names every Param."""
        connection = connections[using]
        sql, params = self.sql(using)
        with connection.cursor() as cursor:
            cursor.execute(sql, _filled(params, values, connection))
            row = cursor.fetchone()
        converters = self._converters[using]
        return row if row is None or not converters else _converted(row, converters, connection)

    def fetchall(self, using: str = "default", **values: Any) -> list[tuple[Any, ...]]:
        """Every row, in the caller's transaction; `values` names every Param."""
        connection = connections[using]
        sql, params = self.sql(using)
        with connection.cursor() as cursor:
            cursor.execute(sql, _filled(params, values, connection))
            rows = cursor.fetchall()
        converters = self._converters[using]
        return [_converted(row, converters, connection) for row in rows] if converters else rows


def _converted(
    row: tuple[Any, ...], converters: dict[int, tuple[list[Any], Any]], connection: Any
) -> tuple[Any, ...]:
    values = list(row)
    for position, (functions, expression) in converters.items():
        value = values[position]
        for function in functions:
            value = function(value, expression, connection)
        values[position] = value
    return tuple(values)


def _filled(params: tuple[Any, ...], values: dict[str, Any], connection: Any) -> list[Any]:
    try:
        return [
            p.field.get_db_prep_value(values[p.name], connection) if type(p) is _Slot else p
            for p in params
        ]
    except KeyError as missing:
        raise TypeError(f"no value for the statement's Param {missing.args[0]!r}") from None


def insert_statement(
    model: type[models.Model], alias: str, returning: bool = False
) -> tuple[str, list[models.Field]]:
    """INSERT of one row of `model` without its automatic primary key, and the fields whose
    prepared values fill it, in order (insert_rows); `returning`
    has the row's new primary key come back with it where the database can say it (both
    SQLite and PostgreSQL can; elsewhere the cursor's lastrowid tells it, as in the ORM)."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    columns = ", ".join(quote(str(field.column)) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})"
    if returning and connection.features.can_return_columns_from_insert:
        sql += f" RETURNING {quote(str(model._meta.pk.column))}"
    return sql, fields


def insert_row(row: models.Model) -> None:
    """Writes `row`, of a model with an automatic primary key, in the caller's transaction,
    and gives it the key it got, as `save()` does (no signal is sent, `save()` is not
    called): the ORM's building of one INSERT cost more than SQLite's running of it, and
    every question writes three rows (chat.turns.admission)."""
    model = type(row)
    alias = router.db_for_write(model)
    connection = connections[alias]
    sql, fields = _returning_insert(model, alias)
    values = [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        if connection.features.can_return_columns_from_insert:
            (pk,) = cursor.fetchone()
        else:
            table, column = model._meta.db_table, str(model._meta.pk.column)
            pk = connection.ops.last_insert_id(cursor, table, column)
    row.pk = model._meta.pk.to_python(pk)
    row._state.adding, row._state.db = False, alias


@functools.cache
def _returning_insert(model: type[models.Model], alias: str) -> tuple[str, list[models.Field]]:
    return insert_statement(model, alias, returning=True)


def update_statement(
    model: type[models.Model], alias: str, names: Sequence[str], where: Sequence[str]
) -> tuple[str, list[models.Field], list[models.Field]]:
    """UPDATE of the columns `names` of the row matched by its primary key and the columns
    `where`; the fields whose values fill the SET, then those of the WHERE, in order
    (update_row, update_rows)."""
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


# A running turn's writes (its events, model calls and text at each group commit, the beat
# itself, the end), in statements built once per model, database and set of columns.
# `bulk_create` and `update()` build their statement anew on every call, field by field and
# row by row; with a turn's few rows that building cost twice what running the statement did
# (bench/turn_statements.py). Each value is prepared by its own field, as they prepare it. As
# with them, no signal is sent and `save()` is not called; unlike `bulk_create`, no primary
# key comes back (the turn never reads them).
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


_statement = functools.cache(insert_statement)


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


_update = functools.cache(update_statement)
