"""Database connections for code that lives outside Django's request cycle."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db import close_old_connections


async def drop_stale_connections() -> None:
    """Sockets and turns live for minutes and never pass through the request cycle that
    closes expired or broken connections; as Channels' database_sync_to_async does, close them
    here, in the thread where the async ORM keeps its connection, so a database restart costs
    one reconnect instead of errors."""
    await sync_to_async(close_old_connections)()
