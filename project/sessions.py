"""Django's database sessions, remembering each row's data as it was read: a socket checks
on every message that its login session is unchanged by comparing the row with this, in
one statement, instead of reading and verifying it again (chat.socket.reads.Permit)."""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore


class SessionStore(DatabaseSessionStore):
    # The row's session_data as last read; None until a row is read.
    stored: str | None = None

    def _get_session_from_db(self) -> Any:
        row = super()._get_session_from_db()  # type: ignore[misc]  # not in django-stubs
        self.stored = row.session_data if row is not None else None
        return row

    async def _aget_session_from_db(self) -> Any:
        row = await super()._aget_session_from_db()  # type: ignore[misc]  # not in django-stubs
        self.stored = row.session_data if row is not None else None
        return row
