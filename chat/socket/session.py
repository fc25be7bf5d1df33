"""A socket's cookies and login session in its scope, as Channels' CookieMiddleware and
SessionMiddlewareStack put them there.

Channels' middleware also wraps every message the socket sends, to save a changed session on an
HTTP response start, which a socket never sends: two checks of the session per streamed frame,
for nothing. Each of its layers also copies the scope, and each copy lives as long as its
socket (about 0.7 KiB each, at thousands of quiet sockets): here the connection's own scope,
made by Daphne for this socket alone, takes both keys. The socket reads the session once, as
it opens (chat.socket.reads.opening)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from django.http.cookie import parse_cookie


class _SocketSession:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        header = next((value for name, value in scope["headers"] if name == b"cookie"), b"")
        scope["cookies"] = cookies = parse_cookie(header.decode("latin1"))
        store = import_module(settings.SESSION_ENGINE).SessionStore
        scope["session"] = store(cookies.get(settings.SESSION_COOKIE_NAME))
        return await self.inner(scope, receive, send)


def socket_session_stack(inner: Any) -> _SocketSession:
    return _SocketSession(inner)
