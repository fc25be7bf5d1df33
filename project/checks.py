"""The project's own system checks.

A database that applied some, not all, of the migrations a squashed one replaces would be
taken for one that applied none: `migrate` then fails on a confusing error. This says what
to do instead, before anything runs.

`check --deploy` fails on what the demo may use and a deployment must not: the demo's public
secret key, DEBUG, the loopback-only default hosts, and OAuth tokens stored under a key made
from SECRET_KEY. Errors, not warnings, so the command's exit status stops a release script."""

from __future__ import annotations

from typing import Any

from django.conf import settings
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


LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@register(Tags.security, deploy=True)
def deployment_settings(**kwargs: Any) -> list[Error]:
    errors: list[Error] = []
    if settings.SECRET_KEY == settings.DEMO_SECRET_KEY:
        errors.append(
            Error(
                "SECRET_KEY is the demo's public key: anyone can forge sessions with it.",
                hint="Set SECRET_KEY to a long random value of your own (docs/deploy.md).",
                id="glassbox.E010",
            )
        )
    if settings.DEBUG:
        errors.append(
            Error(
                "DEBUG is on: error pages would show settings and code to anyone.",
                hint="Leave DEBUG unset (it defaults to off).",
                id="glassbox.E011",
            )
        )
    if not set(settings.ALLOWED_HOSTS) - LOOPBACK:
        errors.append(
            Error(
                "ALLOWED_HOSTS names only this machine (the demo's default).",
                hint="Set ALLOWED_HOSTS to the names the site is served at.",
                id="glassbox.E012",
            )
        )
    if not settings.GLASSBOX_TOKEN_KEY:
        errors.append(
            Error(
                "GLASSBOX_TOKEN_KEY is not set: users' OAuth tokens for MCP servers would be "
                "encrypted with a key made from SECRET_KEY.",
                hint='Make one with: python -c "from cryptography.fernet import Fernet; '
                'print(Fernet.generate_key().decode())"',
                id="glassbox.E013",
            )
        )
    return errors
