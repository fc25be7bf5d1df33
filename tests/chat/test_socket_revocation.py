"""A socket that lost its right stops hearing at once: every way to lose access closes the
sockets that relied on it (pushed through the channel layer), and a socket checks its right
before it shows a new turn, so a change that sent no signal still shows nothing. Each socket
here asked once and then stayed silent, as a stolen session's would."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.sessions.models import Session
from django.db import transaction
from django.utils import timezone

from chat.conversations.erasure import account_erase
from chat.conversations.services import conversation_archive, conversation_delete
from chat.models import Conversation, Message
from chat.socket.revocation import session_group
from tests.support.revocation import (
    browser_of,
    closed_with,
    next_turn_over_the_api,
    silent_socket,
)
from tests.support.sockets import ask, connect, frames_until_done, json_until_done

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

LOGIN, CONVERSATION = 4401, 4404


async def _password_changed(alice, bob, conversation, browser):
    alice.set_password("a new password")
    await alice.asave()
    return alice


async def _logged_out(alice, bob, conversation, browser):
    await browser.post("/accounts/logout/")
    return alice


async def _session_deleted(alice, bob, conversation, browser):
    await Session.objects.filter(session_key=browser.session.session_key).adelete()
    return alice


async def _deactivated_and_reactivated(alice, bob, conversation, browser):
    alice.is_active = False
    await alice.asave()
    alice.is_active = True
    await alice.asave()
    return alice


async def _erased(alice, bob, conversation, browser):
    await sync_to_async(account_erase)(user=alice)
    return None


async def _conversation_deleted(alice, bob, conversation, browser):
    await sync_to_async(conversation_delete)(conversation=conversation)
    return None


async def _conversation_deleted_in_admin(alice, bob, conversation, browser):
    admin = await get_user_model().objects.acreate_superuser("root", password="root-password")
    staff, _ = await browser_of(admin)
    response = await staff.post(
        f"/admin/chat/conversation/{conversation.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    return None


async def _moved_to_bob(alice, bob, conversation, browser):
    conversation.owner = bob
    await conversation.asave()
    return bob


@pytest.mark.parametrize(
    "revoke, code",
    [
        (_password_changed, LOGIN),
        (_logged_out, LOGIN),
        (_session_deleted, LOGIN),
        (_deactivated_and_reactivated, LOGIN),
        (_erased, LOGIN),
        (_conversation_deleted, CONVERSATION),
        (_conversation_deleted_in_admin, CONVERSATION),
        (_moved_to_bob, CONVERSATION),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)).strip("_"),
)
async def test_a_revoked_socket_is_closed_within_a_second_and_hears_nothing_of_the_next_turn(
    alice, bob, alice_conversation, revoke, code
):
    browser, cookie = await browser_of(alice)
    socket = await silent_socket(alice_conversation, cookie)

    rightful = await revoke(alice, bob, alice_conversation, browser)

    assert await closed_with(socket, code)
    if rightful is not None:
        await next_turn_over_the_api(alice_conversation, rightful)
    # The socket is still in its groups until its client goes: it shows nothing more.
    assert await socket.receive_nothing(timeout=0.3)


async def test_deleting_a_user_closes_their_sockets(alice, alice_conversation):
    """Only an account without turns can be deleted (the others are erased, above)."""
    _, cookie = await browser_of(alice)
    socket = await connect(alice_conversation.pk, as_json=True, headers=[(b"cookie", cookie)])
    assert (await socket.connect())[0]
    await alice.adelete()
    assert await closed_with(socket, LOGIN)
    assert await socket.receive_nothing(timeout=0.3)


async def test_a_logout_announced_by_the_previous_release_still_closes_the_socket(
    alice, alice_conversation
):
    """During a rolling deploy a process of the previous release announces a logout in its
    own words (`session.ended`) to the session's group."""
    browser, cookie = await browser_of(alice)
    socket = await silent_socket(alice_conversation, cookie)
    layer, key = get_channel_layer(), browser.session.session_key
    assert layer is not None and key is not None
    await layer.group_send(session_group(key), {"type": "session.ended"})
    assert await closed_with(socket, LOGIN)


async def test_a_session_that_expires_while_its_socket_is_idle_closes_it(
    alice, alice_conversation, settings
):
    settings.GLASSBOX_SOCKET_RECHECK_SECONDS = 0.2
    browser, cookie = await browser_of(alice)
    socket = await silent_socket(alice_conversation, cookie)
    # Expiry sends no signal: the socket's own periodic check finds it.
    await Session.objects.filter(session_key=browser.session.session_key).aupdate(
        expire_date=timezone.now()
    )
    assert await closed_with(socket, LOGIN)
    assert await socket.receive_nothing(timeout=0.3)


async def _password_changed_in_sql(alice, bob, conversation):
    User = get_user_model()
    await User.objects.filter(pk=alice.pk).aupdate(password=make_password("a new password"))
    return await User.objects.aget(pk=alice.pk)  # logged in again, with the new password


async def _moved_to_bob_in_sql(alice, bob, conversation):
    await Conversation.objects.filter(pk=conversation.pk).aupdate(owner=bob)
    return bob


async def _expired_in_sql(alice, bob, conversation):
    await Session.objects.aupdate(expire_date=timezone.now())
    return alice


@pytest.mark.parametrize(
    "revoke, code",
    [
        (_password_changed_in_sql, LOGIN),
        (_moved_to_bob_in_sql, CONVERSATION),
        (_expired_in_sql, LOGIN),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)).strip("_"),
)
@pytest.mark.parametrize("as_json", [True, False], ids=["program", "page"])
async def test_without_any_signal_the_socket_still_shows_nothing_of_the_next_turn(
    alice, bob, alice_conversation, revoke, code, as_json
):
    """The second wall alone: a raw update tells no socket, and the next turn's start is
    where the socket finds its right gone, before it relays a word of it."""
    _, cookie = await browser_of(alice)
    socket = await connect(alice_conversation.pk, as_json=as_json, headers=[(b"cookie", cookie)])
    assert (await socket.connect())[0]
    await ask(socket, "Tell me a joke")
    await (json_until_done(socket) if as_json else frames_until_done(socket))

    rightful = await revoke(alice, bob, alice_conversation)
    assert await socket.receive_nothing(timeout=0.3)  # nobody told it

    await next_turn_over_the_api(alice_conversation, rightful)
    assert await closed_with(socket, code)  # its first output since: nothing of the turn
    assert await socket.receive_nothing(timeout=0.3)


async def test_changes_that_take_no_right_away_leave_the_socket_open_and_showing_turns(
    alice, alice_conversation
):
    """Logging in elsewhere (last_login), renaming, archiving, storing something in the
    session, and a password change rolled back: the socket stays and shows the next turn."""
    browser, cookie = await browser_of(alice)
    socket = await silent_socket(alice_conversation, cookie)

    await browser_of(alice)
    session = browser.session
    await session.aset("seen_the_tour", True)
    await session.asave()
    alice_conversation.title = "Salary"
    await alice_conversation.asave(update_fields=["title", "updated_at"])
    await sync_to_async(conversation_archive)(conversation=alice_conversation, archived=True)
    alice.first_name = "Alice"
    await alice.asave()

    @sync_to_async
    def password_change_rolled_back():
        with pytest.raises(RuntimeError), transaction.atomic():
            alice.set_password("never kept")
            alice.save()
            raise RuntimeError("rolled back")

    await password_change_rolled_back()
    await alice.arefresh_from_db()
    assert await socket.receive_nothing(timeout=0.3)

    await next_turn_over_the_api(alice_conversation, alice)
    shown = await json_until_done(socket)
    assert shown[0]["type"] == "turn" and shown[-1]["state"] == "complete"
    assert await Message.objects.acount() == 4
    await socket.disconnect()
