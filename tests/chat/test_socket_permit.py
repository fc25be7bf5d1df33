"""The check each socket message makes of who asks: one statement while the login stands as
it was verified, the full reading the moment anything in it changed."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.socket.reads import NotAllowed, Permit, Refused
from tests.support.sessions import session_store

pytestmark = pytest.mark.django_db


@pytest.fixture
def permit(client, alice, alice_conversation) -> Permit:
    client.force_login(alice)
    row = Session.objects.get()
    return Permit(
        row.session_key, alice.pk, alice_conversation.pk, (row.session_data, alice.password)
    )


def checked(permit: Permit) -> tuple[Refused | None, int]:
    """What the check says, and how many statements it took."""
    with CaptureQueriesContext(connection) as queries:
        try:
            permit.check()
            refused = None
        except NotAllowed as refusal:
            refused = refusal.reason
    return refused, len(queries)


def test_a_login_as_it_was_verified_costs_one_statement(permit):
    assert checked(permit) == (None, 1)
    assert checked(permit) == (None, 1)


def test_a_session_that_changed_is_read_again_and_then_costs_one_statement(permit):
    Session.objects.update(session_data=Session.objects.get().session_data)  # the same: one
    assert checked(permit) == (None, 1)
    store = session_store(permit.session_key)
    store["seen_the_tour"] = True
    store.save()
    refused, statements = checked(permit)
    assert refused is None and statements > 1
    assert checked(permit) == (None, 1)


@pytest.mark.parametrize(
    "change, reason",
    [
        ("password", Refused.SESSION),
        ("deactivated", Refused.SESSION),
        ("logged out", Refused.SESSION),
        ("expired", Refused.SESSION),
        ("conversation deleted", Refused.CONVERSATION),
        ("conversation given away", Refused.CONVERSATION),
    ],
)
def test_any_change_to_the_login_or_the_conversation_refuses(
    permit, alice, bob, alice_conversation, change, reason
):
    if change == "password":
        alice.set_password("another one")
        alice.save()
    elif change == "deactivated":
        alice.is_active = False
        alice.save()
    elif change == "logged out":
        Session.objects.all().delete()
    elif change == "expired":
        Session.objects.update(expire_date=timezone.now())
    elif change == "conversation deleted":
        alice_conversation.deleted_at = timezone.now()
        alice_conversation.save()
    else:
        alice_conversation.owner = bob
        alice_conversation.save()
    assert checked(permit)[0] == reason


def test_the_session_store_remembers_the_row_it_read(client, alice):
    """What a socket's opening hands its permit, read as Django's sessions read it."""
    from importlib import import_module

    from asgiref.sync import async_to_sync
    from django.conf import settings

    client.force_login(alice)
    row = Session.objects.get()
    store = import_module(settings.SESSION_ENGINE).SessionStore
    loaded = store(row.session_key)
    loaded.load()
    assert loaded.stored == row.session_data
    loaded_async = store(row.session_key)
    async_to_sync(loaded_async.aload)()
    assert loaded_async.stored == row.session_data
    assert store("no-such-session").stored is None


def test_clearing_expired_sessions_is_one_statement_and_keeps_live_ones(client, alice, bob):
    """`manage.py clearsessions` with a receiver of session deletions (the sockets') still
    deletes in one statement, without loading the rows."""
    from django.core.management import call_command
    from django.test import Client

    client.force_login(alice)
    Session.objects.update(expire_date=timezone.now())
    Client().force_login(bob)
    assert Session.objects.count() == 2
    with CaptureQueriesContext(connection) as queries:
        call_command("clearsessions")
    assert len(queries) == 1 and queries[0]["sql"].startswith("DELETE")
    assert [s.get_decoded()["_auth_user_id"] for s in Session.objects.all()] == [str(bob.pk)]
