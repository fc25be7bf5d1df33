"""A socket's login session in its scope, as Channels' SessionMiddlewareStack puts it there.

Channels' middleware also wraps every message the socket sends, to save a changed session on an
HTTP response start, which a socket never sends: two checks of the session per streamed frame,
for nothing. The socket reads the session once, as it opens (chat.socket.reads.opening)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from channels.sessions import CookieMiddleware
from django.conf import settings


class _SocketSession:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        store = import_module(settings.SESSION_ENGINE).SessionStore
        session = store(scope["cookies"].get(settings.SESSION_COOKIE_NAME))
        return await self.inner(dict(scope, session=session), receive, send)


def socket_session_stack(inner: Any) -> CookieMiddleware:
    return CookieMiddleware(_SocketSession(inner))
