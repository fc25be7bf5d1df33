"""Django's ASGI handler runs each request's synchronous part (middleware, view, template) on
a thread of its own, started for that request and ended after it: each request pays for the
thread and for a new database connection, since Django keeps connections per thread. These
threads are kept and reused instead, so persistent connections (CONN_MAX_AGE) persist, as
they do under a threaded WSGI server."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.db import connections

# Idle threads kept (each with its database connection): more than the requests a process
# serves at once in ordinary use; a burst beyond it starts threads that end after it.
KEPT = 16

Scope = dict[str, Any]


class ReusedRequestThreads:
    """ASGI middleware around Django's handler: the outermost thread-sensitive context, with
    an executor of one kept thread, so Django's own (inside it) uses that thread."""

    def __init__(self, app: Any, kept: int = KEPT) -> None:
        self.app = app
        self.kept = kept
        self.idle: list[ThreadPoolExecutor] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        executor = self.idle.pop() if self.idle else ThreadPoolExecutor(1, "request")
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.app(scope, receive, send)
        finally:
            if len(self.idle) < self.kept:
                self.idle.append(executor)
            else:
                executor.shutdown(wait=False)

    def close(self) -> None:
        """Ends the kept threads, each closing its database connections first (PostgreSQL
        drops no database a connection is open to)."""
        idle, self.idle = self.idle, []
        for executor in idle:
            executor.submit(connections.close_all).result(timeout=10)
            executor.shutdown()
