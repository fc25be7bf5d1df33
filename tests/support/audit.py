"""The audit tests' two tools: verify_audit as an operator runs it, and SQL behind the
application's back, as a tamperer would write it."""

from __future__ import annotations

import io

from django.core.management import CommandError, call_command
from django.db import connection


def verify(*args: str) -> tuple[int, str]:
    """verify_audit's exit code and what it printed."""
    out = io.StringIO()
    try:
        call_command("verify_audit", *args, stdout=out)
    except CommandError as failed:
        return failed.returncode, out.getvalue() + str(failed)
    return 0, out.getvalue()


def sql(statement: str, *params) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
