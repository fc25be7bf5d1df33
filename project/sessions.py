"""Django's database sessions, remembering each row's data as it was read: a socket checks
on every message that its login session is unchanged by comparing the row with this, in
one statement, instead of reading and verifying it again (chat.socket.reads.Permit)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import router
from django.utils import timezone


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

    @classmethod
    def clear_expired(cls) -> None:
        """`manage.py clearsessions`: one DELETE, as Django's own would be without a
        receiver of the rows' deletion. Sockets listen for a live session's deletion
        (chat.socket.revocation), and with a receiver Django loads every expired row to
        announce it, though an expired session is already refused by any check."""
        model = cls.get_model_class()
        expired = model.objects.filter(expire_date__lt=timezone.now())
        expired._raw_delete(router.db_for_write(model))

    @classmethod
    async def aclear_expired(cls) -> None:
        await sync_to_async(cls.clear_expired)()
