"""A login session's store, as the configured session engine reads and writes it."""

from __future__ import annotations

from django.contrib.sessions.backends.base import SessionBase
from django.contrib.sessions.models import Session


def session_store(key: str | None) -> SessionBase:
    store = Session.get_session_store_class()
    assert store is not None, "the sessions are not stored in the database"
    return store(key)
