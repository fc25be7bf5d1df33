"""What a socket reads as it opens: a login Django accepts as it stands, on the user's own
conversation, costs one statement; every other login is read step by step and refused, or
renewed, exactly as Django's own reading of a session does."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from activity.models import FeedPreferences
from chat.models import Conversation
from chat.socket.reads import Opening, Permit, Refused, read_opening
from tests.support.sessions import session_store

pytestmark = pytest.mark.django_db


def login(user) -> str:
    client = Client()
    client.force_login(user)
    key = client.session.session_key
    assert key is not None
    return key


def opened(session_key: str | None, conversation_id, surface: str = "page"):
    """What a socket on this login session reads as it opens, the store it read through,
    and how many statements it took."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    with CaptureQueriesContext(connection) as queries:
        read = read_opening({"session": store}, conversation_id, surface)
    return read, store, len(queries)


def test_a_login_that_stands_opens_the_socket_in_one_statement(alice, alice_conversation):
    key = login(alice)
    read, store, statements = opened(key, alice_conversation.pk)
    assert statements == 1
    assert isinstance(read, Opening)
    alice.refresh_from_db()
    alice_conversation.refresh_from_db()
    # Every column as the ORM reads it: times, the UUID, the password hash.
    assert [getattr(read.user, f.attname) for f in alice._meta.concrete_fields] == [
        getattr(alice, f.attname) for f in alice._meta.concrete_fields
    ]
    assert [getattr(read.conversation, f.attname) for f in Conversation._meta.concrete_fields] == [
        getattr(alice_conversation, f.attname) for f in Conversation._meta.concrete_fields
    ]
    assert read.conversation.owner is read.user and read.running is None
    # The socket's permit then compares the row it was read from: one statement a message.
    permit = Permit(key, alice.pk, alice_conversation.pk, (store.stored, read.user.password))
    with CaptureQueriesContext(connection) as queries:
        permit.check()
    assert len(queries) == 1
    assert store.stored == Session.objects.get(session_key=key).session_data
    assert store.get("_auth_user_id") == str(alice.pk)


def test_the_opening_reads_the_users_saved_language_and_feed_settings(alice, alice_conversation):
    FeedPreferences.objects.create(user=alice, language="it", overrides={"max_lines": 4})
    read, _, _ = opened(login(alice), alice_conversation.pk, "page")
    assert isinstance(read, Opening)
    assert (read.prefs, read.language) == FeedPreferences.settings_for(alice.pk, "page")
    assert read.language == "it" and read.prefs.max_lines == 4


def _password_changed(alice, bob, conversation, key):
    alice.set_password("a new password")
    alice.save()


def _deactivated(alice, bob, conversation, key):
    alice.is_active = False
    alice.save()


def _session_deleted(alice, bob, conversation, key):
    Session.objects.filter(session_key=key).delete()


def _session_expired(alice, bob, conversation, key):
    Session.objects.filter(session_key=key).update(expire_date=timezone.now())


def _session_forged(alice, bob, conversation, key):
    Session.objects.filter(session_key=key).update(session_data="forged:data")


def _hash_removed(alice, bob, conversation, key):
    store = session_store(key)
    del store[HASH_SESSION_KEY]
    store.save()


def _backend_unknown(alice, bob, conversation, key):
    store = session_store(key)
    store["_auth_user_backend"] = "somewhere.else.Backend"
    store.save()


def _conversation_deleted(alice, bob, conversation, key):
    conversation.deleted_at = timezone.now()
    conversation.save()


def _conversation_given_away(alice, bob, conversation, key):
    conversation.owner = bob
    conversation.save()


@pytest.mark.parametrize(
    "change, reason",
    [
        (_password_changed, Refused.SESSION),
        (_deactivated, Refused.SESSION),
        (_session_deleted, Refused.SESSION),
        (_session_expired, Refused.SESSION),
        (_session_forged, Refused.SESSION),
        (_hash_removed, Refused.SESSION),
        (_backend_unknown, Refused.SESSION),
        (_conversation_deleted, Refused.CONVERSATION),
        (_conversation_given_away, Refused.CONVERSATION),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)).strip("_"),
)
def test_a_login_django_would_not_accept_as_it_stands_is_refused(
    alice, bob, alice_conversation, change, reason
):
    key = login(alice)
    change(alice, bob, alice_conversation, key)
    read, _, _ = opened(key, alice_conversation.pk)
    assert read == reason


def test_a_socket_without_a_session_is_refused(alice_conversation):
    assert opened(None, alice_conversation.pk)[0] == Refused.SESSION


def test_a_login_under_the_previous_secret_is_renewed_as_django_renews_it(
    alice, alice_conversation
):
    """A login whose hash was made with a secret that is now a fallback is accepted and its
    session moved to a new key with a hash of the current secret, as Django's get_user does."""
    key = login(alice)
    with override_settings(
        SECRET_KEY="a brand new secret", SECRET_KEY_FALLBACKS=[settings.SECRET_KEY]
    ):
        read, store, _ = opened(key, alice_conversation.pk)
        assert isinstance(read, Opening) and read.user == alice
        assert store.session_key != key
        assert store[HASH_SESSION_KEY] == alice.get_session_auth_hash()
        assert not Session.objects.filter(session_key=key).exists()
