"""The squashed migrations: a database that applied the migrations they replace is up to
date without a step, and a new one gets the same schema from them alone."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from tests.support.mcp import ROOT

# SQLite databases of their own.
pytestmark = pytest.mark.own_site

OLD = {
    "activity": [
        "0001_initial", "0002_result_content", "0003_feed_preferences", "0004_feed_conversation",
        "0005_tool_call_record", "0006_heartbeat", "0007_history", "0008_languages",
        "0009_tool_progress_and_server", "0010_model_calls_and_usage", "0011_approvals",
        "0012_event_time", "0013_seq_reserved", "0014_owner_indexes", "0015_feed_opened",
        "0016_event_chain", "0017_result_links",
    ],
    "chat": [
        "0001_initial", "0002_contact_request", "0003_client_id", "0004_history",
        "0005_mcp_servers", "0006_approvals", "0007_regenerated_answers",
    ],
}  # fmt: skip


def manage(database, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}"}
    env.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


RECORD = "INSERT INTO django_migrations (app, name, applied) VALUES (?, ?, datetime('now'))"


def migrated_one_by_one(database, applied: dict[str, list[str]]):
    """A database as a deployment that migrated one by one left it: these apps' records
    are the old migrations named here, and those after the squash once all of them are."""
    assert manage(database, "migrate", "--noinput").returncode == 0
    with sqlite3.connect(database) as db:
        for app, names in applied.items():
            recorded = db.execute("SELECT name FROM django_migrations WHERE app = ?", (app,))
            later = [name for (name,) in recorded if not name.startswith("0001_squashed_")]
            db.execute("DELETE FROM django_migrations WHERE app = ?", (app,))
            if names == OLD[app]:
                names = [*names, *later]
            db.executemany(RECORD, [(app, name) for name in names])


def test_a_database_that_applied_the_old_migrations_needs_none(tmp_path):
    database = tmp_path / "db.sqlite3"
    migrated_one_by_one(database, OLD)

    plan = manage(database, "migrate", "--plan")
    assert plan.returncode == 0, plan.stderr
    assert "No planned migration operations." in plan.stdout
    assert manage(database, "migrate", "--noinput").returncode == 0  # it only records
    shown = manage(database, "showmigrations", "activity", "chat").stdout
    assert "[X] 0001_squashed_0017_result_links (17 squashed migrations)" in shown
    assert "[X] 0001_squashed_0007_regenerated_answers (7 squashed migrations)" in shown


def test_a_database_short_of_a_replaced_migration_is_told_what_to_do(tmp_path):
    database = tmp_path / "db.sqlite3"
    migrated_one_by_one(database, {"activity": OLD["activity"][:-1]})
    refused = manage(database, "migrate", "--noinput")
    assert refused.returncode != 0
    assert (
        "The database applied 16 of the 17 migrations of activity that "
        "0001_squashed_0017_result_links replaces (missing: 0017_result_links)."
    ) in refused.stderr
    assert "Migrate first with a release that still has them" in refused.stderr
