"""Glassbox's ASGI application, counting in its process what becomes a PostgreSQL
transaction: each statement run outside a transaction (autocommit: one each), each commit
(named by the statements it held), and each health check Django makes on a kept connection
(a `SELECT 1` it runs past its own cursors, so no statement wrapper sees it). Written every
half second to BENCH_CENSUS_DIR/<pid>.json, for bench/transactions.py."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import Counter
from pathlib import Path

from project.asgi import application

# Django is set up by importing Glassbox's application; only then can the rest be imported.
assert application is not None

from django.db import connections  # noqa: E402
from django.db.backends.base.base import BaseDatabaseWrapper  # noqa: E402
from django.db.backends.signals import connection_created  # noqa: E402

_lock = threading.Lock()
transactions: Counter[str] = Counter()
statements: Counter[str] = Counter()
_TABLE = re.compile(r'(?:FROM|INTO|UPDATE)\s+"?(\w+)"?', re.IGNORECASE)


def shape(sql: str) -> str:
    """A statement's verb and first table: `SELECT chat_message`."""
    verb = sql.lstrip().split(None, 1)[0].upper()
    table = _TABLE.search(sql)
    return f"{verb} {table.group(1)}" if table else verb


def counted(execute, sql, params, many, context):
    connection = context["connection"]
    what = shape(sql)
    with _lock:
        statements[what] += 1
        if not connection.in_atomic_block:
            transactions[f"autocommit {what}"] += 1
        elif not what.startswith(("SAVEPOINT", "RELEASE")):
            held = connection.__dict__.setdefault("census_held", [])
            if what not in held:
                held.append(what)
    return execute(sql, params, many, context)


def created(sender, connection, **kwargs) -> None:
    if counted not in connection.execute_wrappers:
        connection.execute_wrappers.append(counted)


_commit, _rollback = BaseDatabaseWrapper.commit, BaseDatabaseWrapper.rollback
Backend = type(connections["default"])
_is_usable = Backend.is_usable


def commit(self):
    held = self.__dict__.pop("census_held", [])
    with _lock:
        transactions[f"commit of {' + '.join(held) or 'nothing'}"] += 1
    return _commit(self)


def rollback(self):
    self.__dict__.pop("census_held", None)
    with _lock:
        transactions["rollback"] += 1
    return _rollback(self)


def is_usable(self):
    with _lock:
        transactions["health check SELECT 1 (Django, on a kept connection)"] += 1
    return _is_usable(self)


def write_every(seconds: float, folder: Path) -> None:
    target = folder / f"{os.getpid()}.json"
    while True:
        with _lock:
            data = {"at": time.time(), "transactions": transactions, "statements": statements}
            text = json.dumps(data)
        partial = target.with_suffix(".part")
        partial.write_text(text)
        partial.replace(target)
        time.sleep(seconds)


connection_created.connect(created, weak=False)
# The census counts by patching Django's own methods, as nothing else can see every commit.
BaseDatabaseWrapper.commit = commit  # type: ignore[method-assign]
BaseDatabaseWrapper.rollback = rollback  # type: ignore[method-assign]
Backend.is_usable = is_usable  # type: ignore[method-assign]
threading.Thread(
    target=write_every, args=(0.5, Path(os.environ["BENCH_CENSUS_DIR"])), daemon=True
).start()
