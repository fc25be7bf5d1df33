"""Logging in: guessing is throttled (django-axes), and pages with secrets are not cached."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)


def log_in(client: Client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_after_five_wrong_passwords_even_the_right_one_waits(settings, alice, bob):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert log_in(client, "alice", "guess").status_code == 200  # the form again
    locked = log_in(client, "alice", "guess")
    assert locked.status_code == 429
    assert "Try again in 15 minutes" in locked.content.decode()
    refused = log_in(client, "alice", "alice-password")
    assert refused.status_code == 429 and "_auth_user_id" not in client.session
    # Another account from the same address is not locked with it.
    assert log_in(client, "bob", "bob-password").status_code == 302


def test_a_success_before_the_limit_starts_the_count_again(settings, alice):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in(client, "alice", "guess")
    assert log_in(client, "alice", "alice-password").status_code == 302
    client.post("/accounts/logout/")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert log_in(client, "alice", "guess").status_code == 200
    assert log_in(client, "alice", "alice-password").status_code == 302


def test_the_token_page_is_never_cached(alice_client):
    cache = alice_client.get("/accounts/token/")["Cache-Control"]
    assert "no-store" in cache and "private" in cache


def test_the_api_schema_and_docs_are_public_and_hold_no_data(client, alice):
    """A decision: they describe the API, which is the same for every deployment."""
    get_user_model().objects.create_user("carol", password="x")
    schema = client.get("/api/schema/")
    assert schema.status_code == 200 and b"carol" not in schema.content
    assert client.get("/api/docs/").status_code == 200
    assert client.get("/api/conversations/").status_code == 401
