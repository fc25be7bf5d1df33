"""A PostgreSQL server of the test's own, which it may stop and start (an outage), and the
test's Django connections pointed at it. The shared server is never touched."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.ports import free_port


@dataclass
class PrivatePostgres:
    bin: Path
    data: Path
    port: int
    as_owner: list[str]

    def _ctl(self, *args: str, check: bool = True) -> int:
        return subprocess.run(
            [*self.as_owner, str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", *args],
            check=check, capture_output=True,
        ).returncode  # fmt: skip

    def running(self) -> bool:
        return self._ctl("status", check=False) == 0

    def start(self) -> None:
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._ctl("-o", options, "-l", str(self.data / "log"), "start")

    def stop(self) -> None:
        """As an operator stops it for a restart: open connections are cut at once."""
        self._ctl("-m", "fast", "stop")

    def cut_off(self, cut: bool = True) -> None:
        """As a failover or a network cut looks from this side (`cut=False` ends it): the
        database's connections are cut and no new one is let in, while the server, and its
        start, stay as they were. Returns once every cut connection is gone: a backend told
        to end serves on until it reads the signal, which a loaded machine delays."""
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as connection:
            connection.execute(f"ALTER DATABASE glassbox ALLOW_CONNECTIONS {str(not cut).lower()}")
            if cut:
                ended = connection.execute(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                    " WHERE datname = 'glassbox'"
                ).fetchall()
                if not all(gone for (gone,) in ended):
                    raise RuntimeError("a cut connection was still there after 10 s")

    def renew(self) -> None:
        """Started if a test left it stopped, and the `glassbox` database made anew from the
        migrated one that `migrated` left (a copy takes a fraction of a migration's time):
        whatever a test wrote or cut is gone."""
        import psycopg

        if not self.running():
            self.start()
        with psycopg.connect(self.admin, autocommit=True) as connection:
            connection.execute("DROP DATABASE IF EXISTS glassbox WITH (FORCE)")
            connection.execute(f"CREATE DATABASE glassbox TEMPLATE {MIGRATED}")

    @property
    def admin(self) -> str:
        return f"postgres://glassbox@127.0.0.1:{self.port}/postgres"

    @property
    def url(self) -> str:
        return f"postgres://glassbox@127.0.0.1:{self.port}/glassbox"


def postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail("REQUIRE_SERVICES=1 but no PostgreSQL server under /usr/lib/postgresql")
        pytest.skip("needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)")
    return Path(found[-1]).parent


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A fresh cluster on a free port with a `glassbox` database, trusted on loopback;
    owned by the `postgres` user when the tests run as root (PostgreSQL refuses root)."""
    import psycopg

    bin = postgres_bin()
    work = Path(tempfile.mkdtemp(prefix="glassbox-pg-"))
    as_owner: list[str] = []
    if os.geteuid() == 0:
        as_owner = ["runuser", "-u", "postgres", "--"]
        shutil.chown(work, "postgres", "postgres")
    data = work / "data"
    subprocess.run(
        [*as_owner, str(bin / "initdb"), "-D", str(data), "-U", "glassbox", "--auth=trust",
         "-E", "UTF8", "--no-sync"],
        check=True, capture_output=True,
    )  # fmt: skip
    server = PrivatePostgres(bin, data, free_port(), as_owner)
    server.start()
    try:
        with psycopg.connect(server.admin, autocommit=True) as connection:
            connection.execute('CREATE DATABASE "glassbox"')
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def django_on(server: PrivatePostgres) -> Iterator[None]:
    """Every connection of this process to the default database goes to `server` (migrated
    there), and back to the test database on the way out. Connections are closed both ways:
    those of other threads (the database thread) reconnect on their next trip."""
    from django.core.management import call_command
    from django.db import connections

    settings = connections["default"].settings_dict
    saved = dict(settings)
    connections.close_all()
    settings.update(
        {"NAME": "glassbox", "USER": "glassbox", "PASSWORD": "", "HOST": "127.0.0.1",
         "PORT": str(server.port)}
    )  # fmt: skip
    try:
        call_command("migrate", verbosity=0)
        yield
    finally:
        connections.close_all()
        settings.clear()
        settings.update(saved)


# The database `migrated` keeps for `renew` to copy.
MIGRATED = "glassbox_migrated"


def migrated(server: PrivatePostgres) -> None:
    """Migrates the server's `glassbox` database and keeps a copy for `renew`."""
    import psycopg

    with django_on(server):
        pass  # django_on migrates the database it points Django at
    with psycopg.connect(server.admin, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {MIGRATED} TEMPLATE glassbox")
