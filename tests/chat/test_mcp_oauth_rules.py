"""The rules around per-user OAuth for MCP servers that need no server running: how a server
is declared, the key the tokens are encrypted with (a production site without one does not
start), the callback that accepts only the answer its user was asked for, the link that
finds the waiting authorization, and Disconnect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from chat.agent.mcp.config import ServerConfigError, spec_from_mapping
from chat.servers import secrets
from chat.servers.consents import state_hash
from chat.servers.models import McpConsent, McpGrant, McpGrantRecord
from tests.support.mcp import ROOT

URL = "https://notes.example/mcp"


def test_a_server_each_user_connects_to_is_declared_with_auth_oauth():
    spec = spec_from_mapping(
        {"name": "notes", "url": URL, "auth": "oauth",
         "oauth_client": {"client_id": "glassbox", "client_secret": "s3cr3t"}}
    )  # fmt: skip
    assert spec.oauth and spec.oauth_client["client_id"] == "glassbox"
    assert "s3cr3t" not in repr(spec)
    plain = spec_from_mapping({"name": "notes", "url": URL})
    assert not plain.oauth and plain.fingerprint != spec.fingerprint


@pytest.mark.parametrize(
    ("declaration", "problem"),
    [
        ({"url": URL, "auth": "basic"}, "'auth' is 'oauth' or absent"),
        ({"command": "python", "auth": "oauth"}, "'auth' is for streamable HTTP servers"),
        ({"url": "https://x.example/sse", "auth": "oauth"}, "for streamable HTTP servers"),
        ({"url": URL, "oauth_client": {"client_id": "a"}}, "'oauth_client' needs"),
        ({"url": URL, "auth": "oauth", "oauth_client": {"secret": "a"}}, "holds client_id"),
        ({"url": URL, "auth": "oauth", "oauth_client": ["a"]}, "must be an object of strings"),
    ],
)
def test_a_bad_oauth_declaration_says_what_is_wrong(declaration, problem):
    with pytest.raises(ServerConfigError, match=problem):
        spec_from_mapping({"name": "notes", **declaration})


def test_tokens_are_encrypted_with_the_configured_key_and_unreadable_under_another(settings):
    settings.GLASSBOX_TOKEN_KEY = Fernet.generate_key().decode()
    sealed = secrets.seal("access-token-value")
    assert "access-token-value" not in sealed
    assert secrets.unseal(sealed) == "access-token-value"
    settings.GLASSBOX_TOKEN_KEY = Fernet.generate_key().decode()
    with pytest.raises(secrets.Unreadable):
        secrets.unseal(sealed)


def test_production_without_a_token_key_refuses_and_says_how_to_make_one(settings):
    settings.DEBUG = False
    settings.GLASSBOX_MODEL = "gpt-4o-mini"
    settings.GLASSBOX_TOKEN_KEY = ""
    with pytest.raises(ImproperlyConfigured, match="GLASSBOX_TOKEN_KEY is not set"):
        secrets.seal("x")
    settings.GLASSBOX_TOKEN_KEY = "not-a-key"
    with pytest.raises(ImproperlyConfigured, match="not a Fernet key"):
        secrets.seal("x")
    # The demo (and DEBUG) fall back to a key made from SECRET_KEY.
    settings.GLASSBOX_TOKEN_KEY = ""
    settings.GLASSBOX_MODEL = "glassbox-demo"
    assert secrets.unseal(secrets.seal("x")) == "x"


@pytest.mark.own_site
def test_a_production_site_declaring_an_oauth_server_without_a_key_does_not_start():
    declared = json.dumps([{"name": "notes", "url": URL, "auth": "oauth"}])
    env = {**os.environ, "GLASSBOX_MCP_SERVERS": declared, "OPENAI_API_KEY": "sk-test"}
    env.pop("GLASSBOX_TOKEN_KEY", None)
    env.pop("DEBUG", None)
    run = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode != 0
    assert "GLASSBOX_TOKEN_KEY is not set" in run.stderr


def _consent(user, state: str = "the-state", **fields) -> McpConsent:
    return McpConsent.objects.create(
        user=user,
        server="notes",
        state_hash=state_hash(state),
        authorization_url=f"https://auth.example/authorize?state={state}&scope=notes%3Aread",
        scopes="notes:read",
        deadline=timezone.now() + timedelta(minutes=5),
        **fields,
    )


CALLBACK = "/accounts/connections/callback/"


@pytest.mark.django_db
def test_the_callback_takes_only_the_answer_its_user_was_asked_for(client, alice, bob):
    consent = _consent(alice)
    client.force_login(bob)
    refused = client.get(CALLBACK, {"code": "c0de", "state": "the-state"})
    assert refused.status_code == 400
    assert "Nothing was saved" in refused.text
    client.force_login(alice)
    assert client.get(CALLBACK, {"code": "c0de", "state": "another"}).status_code == 400
    assert client.get(CALLBACK, {"code": "c0de"}).status_code == 400
    consent.refresh_from_db()
    assert consent.answered_at is None and consent.code == ""

    answered = client.get(CALLBACK, {"code": "c0de", "state": "the-state", "iss": "https://a"})
    assert answered.status_code == 200 and "Connected to notes" in answered.text
    consent.refresh_from_db()
    assert consent.answered_at is not None and "c0de" not in consent.code
    assert secrets.unseal(consent.code) == "c0de"
    # An answer is taken once.
    assert client.get(CALLBACK, {"code": "other", "state": "the-state"}).status_code == 400


@pytest.mark.django_db
def test_an_answer_after_the_deadline_is_refused(client, alice):
    consent = _consent(alice)
    McpConsent.objects.filter(pk=consent.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    client.force_login(alice)
    assert client.get(CALLBACK, {"code": "c0de", "state": "the-state"}).status_code == 400


@pytest.mark.django_db
def test_a_denial_is_recorded_as_a_refusal(client, alice):
    _consent(alice)
    client.force_login(alice)
    page = client.get(CALLBACK, {"error": "access_denied", "state": "the-state"})
    assert page.status_code == 200 and "Not connected to notes" in page.text
    record = McpGrantRecord.objects.get()
    assert (record.user, record.server, record.action, record.detail, record.scopes) == (
        alice, "notes", "refused", "access_denied", "notes:read",
    )  # fmt: skip


@pytest.mark.django_db
def test_the_turns_link_goes_to_its_users_waiting_authorization_only(client, alice, bob):
    _consent(alice)
    client.force_login(alice)
    link = client.get("/accounts/connections/notes/authorize/")
    assert link.status_code == 302
    assert link["Location"].startswith("https://auth.example/authorize?state=the-state")
    client.force_login(bob)
    missing = client.get("/accounts/connections/notes/authorize/")
    assert missing.status_code == 404 and "No turn is waiting for notes" in missing.text


@pytest.mark.django_db
def test_disconnect_forgets_the_grant_and_is_recorded(client, alice, bob):
    McpGrant.objects.create(user=alice, server="notes", tokens=secrets.seal("{}"), scopes="a b")
    client.force_login(bob)
    client.post("/accounts/connections/", {"server": "notes"})
    assert McpGrant.objects.filter(user=alice).exists()  # bob disconnects only his own

    client.force_login(alice)
    listed = client.get("/accounts/connections/")
    assert "notes" in listed.text and "<code>a</code> <code>b</code>" in listed.text
    page = client.post("/accounts/connections/", {"server": "notes"}, follow=True)
    assert "Disconnected from notes" in page.text
    assert not McpGrant.objects.exists()
    record = McpGrantRecord.objects.get()
    assert (record.user, record.action, record.scopes) == (alice, "disconnected", "a b")
    again = client.post("/accounts/connections/", {"server": "notes"}, follow=True)
    assert "You are not connected to that server." in again.text
    assert McpGrantRecord.objects.count() == 1


@pytest.mark.django_db
def test_grant_records_cannot_be_changed_or_deleted(alice):
    record = McpGrantRecord.objects.create(user=alice, server="notes", action="granted")
    with pytest.raises(ValueError, match="append-only"):
        record.save()
    with pytest.raises(ValueError, match="append-only"):
        record.delete()


@pytest.mark.django_db
def test_admins_see_grants_and_their_record_and_change_neither(admin_client, alice):
    McpGrant.objects.create(user=alice, server="notes", tokens=secrets.seal("{}"), scopes="a")
    McpGrantRecord.objects.create(user=alice, server="notes", action="granted", scopes="a")
    assert "notes" in admin_client.get("/admin/servers/mcpgrantrecord/").text
    assert "notes" in admin_client.get("/admin/servers/mcpgrant/").text
    assert admin_client.get("/admin/servers/mcpgrantrecord/add/").status_code == 403
    assert admin_client.get("/admin/servers/mcpgrant/add/").status_code == 403
    grant = McpGrant.objects.get()
    assert admin_client.post(f"/admin/servers/mcpgrant/{grant.pk}/delete/").status_code == 403


@pytest.mark.django_db
def test_erasing_an_account_deletes_its_grants_and_records_the_disconnection(alice):
    from chat.conversations.erasure import account_erase

    McpGrant.objects.create(user=alice, server="notes", tokens=secrets.seal("{}"), scopes="a")
    _consent(alice)
    account_erase(user=alice)
    assert not McpGrant.objects.exists() and not McpConsent.objects.exists()
    record = McpGrantRecord.objects.get()
    assert (record.action, record.detail) == ("disconnected", "account erased")


@pytest.mark.django_db
def test_the_client_metadata_document_names_the_site_and_its_callback(client, settings):
    assert client.get("/oauth/client-metadata.json").status_code == 404  # none configured
    settings.GLASSBOX_OAUTH_CLIENT_METADATA_URL = (
        "https://glassbox.example/oauth/client-metadata.json"
    )
    settings.GLASSBOX_OAUTH_REDIRECT_URL = (
        "https://glassbox.example/accounts/connections/callback/"
    )
    document = client.get("/oauth/client-metadata.json").json()  # no login needed
    assert document["client_id"] == settings.GLASSBOX_OAUTH_CLIENT_METADATA_URL
    assert document["redirect_uris"] == [settings.GLASSBOX_OAUTH_REDIRECT_URL]
    assert "refresh_token" in document["grant_types"]


@pytest.mark.django_db
def test_the_served_client_metadata_is_the_metadata_the_client_registers_with(client, settings):
    from mcp.client.auth.utils import create_client_registration_request

    from chat.agent.mcp.oauth import client_metadata
    from chat.servers.oauth_client import deployment_client

    settings.GLASSBOX_OAUTH_CLIENT_METADATA_URL = (
        "https://glassbox.example/oauth/client-metadata.json"
    )
    settings.GLASSBOX_OAUTH_REDIRECT_URL = (
        "https://glassbox.example/accounts/connections/callback/"
    )
    served = client.get("/oauth/client-metadata.json").json()
    # The request the SDK sends to a registration endpoint, built from what the client holds.
    request = create_client_registration_request(
        None, client_metadata(deployment_client()), "https://auth.example"
    )
    registered = json.loads(request.content)

    named = {"client_id", "token_endpoint_auth_method"}
    assert {key: value for key, value in served.items() if key not in named} == registered
    assert served["token_endpoint_auth_method"] == "none"  # a metadata document holds no secret
    assert registered["redirect_uris"] == [settings.GLASSBOX_OAUTH_REDIRECT_URL]
