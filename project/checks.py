"""A database that applied some, not all, of the migrations a squashed one replaces would be
taken for one that applied none: `migrate` then fails on a confusing error. This says what
to do instead, before anything runs."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, Tags, register
from django.db import DatabaseError, connections
from django.db.migrations.loader import MigrationLoader

HINT = "Migrate first with a release that still has them, then with this one."


@register(Tags.database)
def squashed_migrations_reached(databases: Any = None, **kwargs: Any) -> list[Error]:
    errors: list[Error] = []
    for alias in databases or []:
        try:
            loader = MigrationLoader(connections[alias], ignore_no_migrations=True)
        except (DatabaseError, ValueError):
            continue  # no database yet, or another check's business
        applied = loader.applied_migrations or {}
        for (app, name), migration in loader.replacements.items():
            done = [key for key in migration.replaces if key in applied]
            if done and len(done) < len(migration.replaces):
                missing = [key[1] for key in migration.replaces if key not in applied]
                errors.append(
                    Error(
                        f"The database applied {len(done)} of the {len(migration.replaces)} "
                        f"migrations of {app} that {name} replaces (missing: "
                        f"{', '.join(missing)}).",
                        hint=HINT,
                        id="glassbox.E001",
                    )
                )
    return errors
