"""Names for the few statements written by hand, where the ORM took far longer to build a
statement than the database to run it (each says where and how much): quoted for the
database in use, read from the models so a renamed table or column is followed."""

from __future__ import annotations

from django.db import connection, models


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field), f"{name} is not a column of {model.__name__}"
    return connection.ops.quote_name(str(field.column))
