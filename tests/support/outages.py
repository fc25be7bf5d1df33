"""Outages a test causes for real: a PostgreSQL connection cut from a second connection (what
a database restart does to every connection the application holds), a database that refuses
connections, and a Redis server of the test's own that it stops and starts again."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from tests.support.ports import free_port


def postgres_only() -> None:
    """Skips a test that needs PostgreSQL on SQLite, unless REQUIRE_SERVICES=1 makes that a
    failure."""
    if connection.vendor == "postgresql":
        return
    if os.environ.get("REQUIRE_SERVICES") == "1":
        pytest.fail("REQUIRE_SERVICES=1 but the tests run on SQLite")
    pytest.skip("needs PostgreSQL (DATABASE_URL); .ci/run provides it")


@contextlib.contextmanager
def side_connection() -> Iterator[Any]:
    """A second connection to the test database, beside the application's, in autocommit."""
    import psycopg

    given = connection.settings_dict
    with psycopg.connect(
        host=given["HOST"] or None,
        port=given["PORT"] or None,
        user=given["USER"],
        password=given["PASSWORD"],
        dbname=given["NAME"],
        autocommit=True,
    ) as side:
        yield side


@contextlib.contextmanager
def database_refusing() -> Iterator[None]:
    """This thread's database is one that refuses every connection until the block ends: a
    closed port on PostgreSQL, a file in a directory that does not exist on SQLite."""
    original = connections[DEFAULT_DB_ALIAS]
    if original.vendor == "postgresql":
        refused = {"HOST": "127.0.0.1", "PORT": str(free_port())}
    else:
        refused = {"NAME": str(Path(tempfile.gettempdir()) / "no-such-dir" / "glassbox.sqlite3")}
    refusing = type(original)({**original.settings_dict, **refused}, DEFAULT_DB_ALIAS)
    connections[DEFAULT_DB_ALIAS] = refusing
    try:
        yield
    finally:
        refusing.close()
        connections[DEFAULT_DB_ALIAS] = original


@contextlib.contextmanager
def connection_cut_on_insert(model: Any) -> Iterator[None]:
    """Until the block ends, the PostgreSQL connection that inserts a row of `model` is ended
    by the server as it does (a trigger that terminates its own backend): a database lost in
    the middle of a transaction."""
    table = model._meta.db_table
    with side_connection() as side:
        side.execute(
            "CREATE FUNCTION glassbox_cut() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$"
        )
        side.execute(
            f"CREATE TRIGGER glassbox_cut BEFORE INSERT ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION glassbox_cut()"
        )
    try:
        yield
    finally:
        with side_connection() as side:
            side.execute(f"DROP TRIGGER glassbox_cut ON {table}")
            side.execute("DROP FUNCTION glassbox_cut()")


def backend_pid() -> int:
    """The PostgreSQL server process behind this thread's connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def cut(pid: int) -> None:
    """Ends that server process, as a restart of the database would: its client finds the
    connection closed at its next statement."""
    with side_connection() as side:
        (ended,) = side.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()
    assert ended, f"no PostgreSQL process {pid} to end"


class RedisServer:
    """A redis-server of the test's own on a free port, in a temporary directory."""

    def __init__(self, work: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if os.environ.get("REQUIRE_SERVICES") == "1":
                pytest.fail("REQUIRE_SERVICES=1 but redis-server is missing")
            pytest.skip("needs redis-server")
        self.binary, self.work = binary, work
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.work)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not self._answers():
            assert self.process.poll() is None, "redis-server exited"
            assert time.monotonic() < deadline, "redis-server did not start in 10 s"
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def _answers(self) -> bool:
        import socket

        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", self.port), timeout=1) as probe,
        ):
            probe.sendall(b"PING\r\n")
            return probe.recv(16).startswith(b"+PONG")
        return False


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    with tempfile.TemporaryDirectory() as work:
        server = RedisServer(Path(work))
        server.start()
        try:
            yield server
        finally:
            server.stop()
