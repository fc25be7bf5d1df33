"""The test databases on PostgreSQL are copies of one database migrated once per run
(CREATE DATABASE ... TEMPLATE, a fraction of a second): pytest-xdist's workers no longer each
run every migration, side by side, at the start of the run."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tests.support.servers import SERVED_SETTINGS, built, manage, once_per_run, run_folder

BUILT_AS = "template-database"
SEEDED_AS = "seeded-database"


def template_name(folder: Path) -> str:
    """Named after the run's folder: runs side by side on one server keep theirs apart."""
    return f"test_glassbox_template_{hashlib.sha256(str(folder).encode()).hexdigest()[:12]}"


def on_postgres() -> str | None:
    """The configured PostgreSQL database's URL, if that is where the tests run."""
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith("postgres") else None


def migrated_template(url: str, folder: Path) -> str:
    """The run's template, migrated by the first process to ask for it, as Django migrates a
    test database (with run-syncdb)."""
    name = template_name(folder)

    def build() -> None:
        recreate(url, name)
        env = {**os.environ, "DATABASE_URL": url.rsplit("/", 1)[0] + "/" + name}
        manage(env, "migrate", "--noinput", "--run-syncdb", "-v", "0")

    once_per_run(folder, BUILT_AS, build)
    return name


def seeded_template(url: str) -> str | None:
    """A database migrated and seeded with the demo once per run, which the servers' fresh
    PostgreSQL databases are copies of (tests.support.servers.two_servers); None outside a
    run."""
    folder = run_folder()
    if folder is None:
        return None
    name = template_name(folder) + "_seeded"

    def build() -> None:
        recreate(url, name)
        env = {
            **os.environ,
            "DATABASE_URL": url.rsplit("/", 1)[0] + "/" + name,
            "DJANGO_SETTINGS_MODULE": SERVED_SETTINGS,
        }
        for command in (["migrate", "--noinput"], ["seed_demo"]):
            manage(env, *command, "-v", "0")

    once_per_run(folder, SEEDED_AS, build)
    return name


def recreate(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def drop_templates(folder: Path) -> None:
    """At the end of the run, in pytest's first process: after every worker's last copy."""
    url = on_postgres()
    names = [
        name
        for name, marker in (
            (template_name(folder), BUILT_AS),
            (template_name(folder) + "_seeded", SEEDED_AS),
        )
        if built(folder, marker)
    ]
    if url is None or not names:
        return
    import psycopg

    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        for name in names:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
