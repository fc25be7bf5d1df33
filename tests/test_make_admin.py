"""`make admin` makes an admin account in the database `make run` serves (DATABASE_URL),
migrating it first, so it works before the first `make run`; with DJANGO_SUPERUSER_PASSWORD
set it asks nothing, and says what is missing when it cannot."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.support.servers import ROOT

# SQLite databases of their own.
pytestmark = [
    pytest.mark.own_site,
    pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make"),
]

PASSWORD = "a long passphrase for the admin"


def make_admin(database: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # Not this run's make's flags or level (under `make test`), and never the virtualenv
    # rebuilt from a test: the tests run in the one `make admin` would build.
    outer = {
        key: value for key, value in os.environ.items() if not key.startswith(("MAKE", "MFLAGS"))
    }
    return subprocess.run(
        ["make", "--no-print-directory", "-o", ".venv/.installed", "admin"],
        cwd=ROOT,
        env={**outer, "DATABASE_URL": f"sqlite:///{database}", **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_make_admin_creates_a_superuser_in_a_new_database_without_asking(tmp_path):
    database = tmp_path / "db.sqlite3"
    done = make_admin(
        database,
        DJANGO_SUPERUSER_USERNAME="admin",
        DJANGO_SUPERUSER_EMAIL="admin@example.com",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Superuser created successfully." in done.stdout
    with contextlib.closing(sqlite3.connect(database)) as connection:
        query = (
            "SELECT is_superuser, is_staff, is_active, password FROM auth_user WHERE username = ?"
        )
        superuser, staff, active, password = connection.execute(query, ("admin",)).fetchone()
    assert (superuser, staff, active) == (1, 1, 1)
    # As the site's settings hash it (the tests' own settings use a faster hasher).
    assert PBKDF2PasswordHasher().verify(PASSWORD, password)


def test_make_admin_without_asking_says_what_is_missing_and_creates_nobody(tmp_path):
    database = tmp_path / "db.sqlite3"
    done = make_admin(
        database, DJANGO_SUPERUSER_USERNAME="admin", DJANGO_SUPERUSER_PASSWORD=PASSWORD
    )
    assert done.returncode != 0
    assert "You must use --email with --noinput." in done.stderr
    with contextlib.closing(sqlite3.connect(database)) as connection:
        assert connection.execute("SELECT COUNT(*) FROM auth_user").fetchone() == (0,)
