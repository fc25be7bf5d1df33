"""What PostgreSQL's planner does with a statement, for tests that an index is used."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction


def plan_of(sql: str, params: Sequence[Any]) -> str:
    """The plan of a statement when no table may be read whole (a test's few rows would
    make a full read cheaper than any index): an index its filter fits is named in it."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())
