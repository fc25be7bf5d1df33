"""A socket reads its login from the session cookie once, as it opens: a cookie that names no
live login (forged, unparsable, flushed by a logout, issued before a password change, or
expired) opens nothing. (A live one opening it: tests/chat/test_socket_turn.py, through the same
cookie header.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session
from django.utils import timezone

from tests.support.sockets import session_cookie_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def socket_with(conversation, cookie: bytes) -> WebsocketCommunicator:
    from project.asgi import application

    return WebsocketCommunicator(
        application,
        f"/ws/c/{conversation.pk}/",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)],
    )


async def refused(socket: WebsocketCommunicator) -> bool:
    await socket.connect(timeout=10)
    return await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


def key_of(cookie: bytes) -> str:
    return cookie.decode().split("=", 1)[1]


async def test_a_forged_session_cookie_is_refused(alice_conversation):
    assert await refused(socket_with(alice_conversation, b"sessionid=not-a-session-at-all"))


async def test_a_cookie_header_that_cannot_be_parsed_is_refused(alice_conversation):
    assert await refused(socket_with(alice_conversation, b"sessionid; ;=;\x7f"))


async def test_a_session_flushed_by_logout_is_refused(alice, alice_conversation):
    cookie = await sync_to_async(session_cookie_for)(alice)
    await sync_to_async(Session.objects.filter(session_key=key_of(cookie)).delete)()
    assert await refused(socket_with(alice_conversation, cookie))


async def test_a_session_from_before_a_password_change_is_refused(alice, alice_conversation):
    cookie = await sync_to_async(session_cookie_for)(alice)

    def change_password() -> None:
        alice.set_password("a whole new secret")
        alice.save()

    await sync_to_async(change_password)()
    assert await refused(socket_with(alice_conversation, cookie))


async def test_an_expired_session_is_refused(alice, alice_conversation):
    cookie = await sync_to_async(session_cookie_for)(alice)
    await sync_to_async(Session.objects.filter(session_key=key_of(cookie)).update)(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    assert await refused(socket_with(alice_conversation, cookie))
