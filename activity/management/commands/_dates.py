"""The date arguments of the audit commands: a day (midnight UTC) or an ISO date-time."""

from __future__ import annotations

from datetime import UTC, datetime, time

from django.core.management.base import CommandError
from django.utils.dateparse import parse_date, parse_datetime


def moment(text: str) -> datetime:
    """'2026-11-30' (its start, UTC) or '2026-11-30T12:00:00+01:00'; anything else is an
    error that says what is accepted."""
    try:
        when = parse_datetime(text)
        if when is None and (day := parse_date(text)) is not None:
            when = datetime.combine(day, time.min)
    except ValueError:
        when = None
    if when is None:
        raise CommandError(f"{text!r} is not a date (2026-11-30) or a date-time (ISO 8601).")
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
