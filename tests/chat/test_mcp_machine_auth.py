"""A shared MCP server Glassbox itself is authorized for (OAuth client credentials): the
declaration is checked with clear errors, and the server's tools run with the machine's
token, against a real authorization server and MCP server (tests.support.machine_server)."""

from __future__ import annotations

import asyncio
import json
import logging
import re

import mcp_types
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.test import AsyncClient

from chat.agent.mcp import connections
from chat.agent.mcp.config import ServerConfigError, ServerSpec, spec_from_mapping
from chat.servers import configured
from chat.servers.configured import configured_servers
from chat.servers.models import McpServer, McpServerChange
from tests.support.machine_server import CLIENT_ID, CLIENT_SECRET
from tests.support.mcp import http_server
from tests.support.responses import streamed
from tests.support.sockets import json_turn

SERVERS = "/admin/servers/mcpserver/"
PEM = "-----BEGIN PRIVATE KEY-----\nnot-a-real-key\n-----END PRIVATE KEY-----\n"


def machine(url: str = "http://127.0.0.1:9/mcp", **grant: str) -> ServerSpec:
    return spec_from_mapping({"name": "service", "url": url, "client_credentials": grant})


@pytest.fixture(scope="module")
def service_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def service_url(service_key):
    public = service_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with http_server("tests.support.machine_server", MACHINE_PUBLIC_KEY=public.decode()) as url:
        yield url


def text_of(result: mcp_types.CallToolResult) -> str:
    """A tool's answer, as text."""
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent), content
    return content.text


async def opened(sessions, spec: ServerSpec) -> connections.Connection:
    (connection,) = await sessions.connect([spec])
    async with asyncio.timeout(20):
        await connection.tried.wait()
    return connection


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_a_server_declared_with_client_credentials_runs_its_tools_as_glassbox(
    sessions, service_url, method
):
    issuer = service_url.removesuffix("/mcp")
    spec = machine(
        service_url,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        method=method,
        issuer=issuer,
    )
    connection = await opened(sessions, spec)
    assert isinstance(connection.state, connections.Connected), connection.reason
    result = await connection.call("whoami", {})
    assert not result.is_error
    assert text_of(result) == f"you are {CLIENT_ID}"


@pytest.mark.asyncio
async def test_a_server_declared_with_a_private_key_file_signs_its_way_in(
    sessions, service_url, service_key, tmp_path
):
    key = tmp_path / "service.pem"
    key.write_bytes(
        service_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    issuer = service_url.removesuffix("/mcp")
    spec = machine(
        service_url,
        client_id=CLIENT_ID,
        private_key_file=str(key),
        signing_algorithm="ES256",
        issuer=issuer,
    )
    connection = await opened(sessions, spec)
    assert isinstance(connection.state, connections.Connected), connection.reason
    result = await connection.call("whoami", {})
    assert text_of(result) == f"you are {CLIENT_ID}"

    stranger, stranger_key = ec.generate_private_key(ec.SECP256R1()), tmp_path / "other.pem"
    stranger_key.write_bytes(
        stranger.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    grant = {**spec.client_credentials, "private_key_file": str(stranger_key)}
    refused = await opened(sessions, machine(service_url, **grant))
    assert str(refused.reason) == "its authorization server refused to issue a token"


@pytest.mark.asyncio
async def test_a_key_file_gone_since_start_up_leaves_the_server_down_saying_so(sessions, tmp_path):
    key = tmp_path / "service.pem"
    key.write_text(PEM)
    spec = machine(client_id="svc", private_key_file=str(key))
    key.unlink()
    connection = await opened(sessions, spec)
    assert isinstance(connection.state, connections.Down)
    assert str(connection.reason) == "its client's private key cannot be read"


@pytest.mark.asyncio
async def test_a_wrong_secret_leaves_the_server_down_with_a_clear_reason_and_no_tool(
    sessions, service_url, caplog
):
    caplog.set_level(logging.DEBUG)
    spec = machine(service_url, client_id=CLIENT_ID, client_secret="not-the-secret")
    connection = await opened(sessions, spec)
    assert isinstance(connection.state, connections.Down)
    assert str(connection.reason) == "its authorization server refused to issue a token"
    assert connection.tools == [] and connection.client is None
    assert "not-the-secret" not in caplog.text and "not-the-secret" not in repr(spec)


@pytest.mark.asyncio
async def test_credentials_for_another_issuer_are_not_sent_where_the_server_points(
    sessions, service_url
):
    grant = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
    spec = machine(service_url, **grant, issuer="https://auth.example")
    connection = await opened(sessions, spec)
    assert isinstance(connection.state, connections.Down)
    assert str(connection.reason) == "its OAuth authorization failed"
    assert connection.tools == []


def test_a_private_key_is_named_by_the_declaration_and_read_from_the_environment(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("SERVICE_KEY", PEM)
    by_env = machine(client_id="svc", private_key_env="SERVICE_KEY", scope="notes:read")
    assert by_env.client_credentials == {
        "client_id": "svc",
        "private_key_env": "SERVICE_KEY",
        "method": "private_key_jwt",
        "signing_algorithm": "RS256",
        "scope": "notes:read",
    }
    key = tmp_path / "service.pem"
    key.write_text(PEM)
    by_file = machine(client_id="svc", private_key_file=str(key), signing_algorithm="ES256")
    assert PEM not in json.dumps(by_file.client_credentials) and PEM not in repr(by_file)


@pytest.mark.parametrize(
    ("grant", "problem"),
    [
        ({"client_secret": "x"}, "'client_credentials' needs a 'client_id'"),
        ({"client_id": "svc"}, "needs a 'client_secret', 'private_key_env' or"),
        ({"client_id": "svc", "client_secret": "x", "colour": "red"}, "unknown field 'colour'"),
        (
            {"client_id": "svc", "client_secret": "x", "method": "private_key_jwt"},
            "a secret is sent as 'client_secret_basic' or 'client_secret_post'",
        ),
        (
            {"client_id": "svc", "client_secret": "x", "private_key_env": "SERVICE_KEY"},
            "give a 'client_secret' or a private key, not both",
        ),
        (
            {"client_id": "svc", "private_key_env": "GLASSBOX_NO_SUCH_KEY"},
            "the environment variable 'GLASSBOX_NO_SUCH_KEY' is not set",
        ),
        (
            {"client_id": "svc", "private_key_file": "/no/such/key.pem"},
            "cannot read the file '/no/such/key.pem'",
        ),
        (
            {"client_id": "svc", "client_secret": "x", "issuer": "auth.example"},
            "'issuer' is the authorization server's http:// or https:// issuer URL",
        ),
        (
            {"client_id": "svc", "private_key_env": "SERVICE_KEY", "signing_algorithm": "HS256"},
            "'signing_algorithm' is one of RS256",
        ),
    ],
)
def test_a_bad_client_credentials_declaration_says_what_is_wrong(monkeypatch, grant, problem):
    monkeypatch.setenv("SERVICE_KEY", PEM)
    with pytest.raises(ServerConfigError, match=re.escape(problem)) as raised:
        machine(**grant)
    assert "server 'service'" in str(raised.value) and PEM not in str(raised.value)


@pytest.mark.parametrize(
    ("declaration", "problem"),
    [
        ({"command": "python"}, "'client_credentials' is for streamable HTTP servers"),
        ({"url": "http://x/sse"}, "'client_credentials' is for streamable HTTP servers"),
        ({"url": "http://x/mcp", "auth": "oauth"}, 'without "auth": "oauth"'),
        ({"url": "http://x/mcp", "client_credentials": "svc:secret"}, "an object of strings"),
    ],
)
def test_client_credentials_belong_to_a_shared_streamable_http_server(declaration, problem):
    data = {"name": "service", "client_credentials": {"client_id": "a", "client_secret": "b"}}
    with pytest.raises(ServerConfigError, match=re.escape(problem)):
        spec_from_mapping({**data, **declaration})


SECRET_VARIABLE = "GLASSBOX_TEST_SERVICE_SECRET"


@pytest.fixture
def admin_servers():
    """The admin's servers as turns read them; forgotten at the end, as the rows are (a
    flush sends no signal), so no later test of this process is offered this one's."""
    yield
    configured.forget()


def admin_form(**fields: str) -> dict[str, str]:
    """The admin's MCP server form for a shared HTTP server, with these fields."""
    return {
        "name": "service", "transport": "http", "url": "http://127.0.0.1:9/mcp", "command": "",
        "enabled": "on", "headers_text": "", "args_text": "", "env_text": "", "tools_text": "",
        "approval_text": "", **fields,
    }  # fmt: skip


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("place", ["credentials_env", "credentials_file"])
async def test_a_server_declared_in_the_admin_form_runs_its_tools_and_never_shows_the_secret(
    settings, sessions, service_url, admin_user, alice, alice_conversation, monkeypatch,
    tmp_path, caplog, place, admin_servers,
):  # fmt: skip
    caplog.set_level(logging.DEBUG)
    settings.GLASSBOX_MCP_SERVERS = []
    monkeypatch.setenv(SECRET_VARIABLE, CLIENT_SECRET)
    secret_file = tmp_path / "service-secret"
    secret_file.write_text(CLIENT_SECRET + "\n")
    named = SECRET_VARIABLE if place == "credentials_env" else str(secret_file)
    admin = AsyncClient()
    await admin.aforce_login(admin_user)
    fields = admin_form(
        url=service_url,
        credentials_client_id=CLIENT_ID,
        credentials_method="client_secret_post",
        credentials_issuer=service_url.removesuffix("/mcp"),
        **{place: named},
    )
    saved = await admin.post(f"{SERVERS}add/", fields)
    assert saved.status_code == 302, saved.content.decode()
    row = await McpServer.objects.aget(name="service")
    kind = "client_secret_env" if place == "credentials_env" else "client_secret_file"
    assert row.client_credentials == {
        "client_id": CLIENT_ID,
        "method": "client_secret_post",
        kind: named,
        "issuer": service_url.removesuffix("/mcp"),
    }

    events = await json_turn(alice_conversation, alice, "service__whoami {}")
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [True], events
    assert events[-1]["state"] == "complete"

    health = await admin.get(f"{SERVERS}health/")
    where = "the environment variable" if place == "credentials_env" else "the file"
    assert (
        f"client {CLIENT_ID} (client_secret_post), secret from {where} {named}"
        in health.content.decode()
    )
    change = await McpServerChange.objects.aget(server="service")
    pages = [
        f"{SERVERS}",
        f"{SERVERS}{row.pk}/change/",
        f"{SERVERS}health/",
        "/admin/servers/mcpserverchange/",
        f"/admin/servers/mcpserverchange/{change.pk}/change/",
        "/api/feeds/export/?format=ndjson",
        "/admin/activity/activityfeed/",
    ]
    for path in pages:
        response = await admin.get(path)
        assert response.status_code == 200, path
        body = b"".join(await streamed(response)) if response.streaming else response.content
        assert CLIENT_SECRET.encode() not in body, path
    assert named in (await admin.get(f"{SERVERS}{row.pk}/change/")).content.decode()
    assert CLIENT_SECRET not in caplog.text


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_private_key_named_in_the_admin_form_signs_its_way_in(
    settings, sessions, service_url, service_key, admin_user, tmp_path, admin_servers
):
    settings.GLASSBOX_MCP_SERVERS = []
    key = tmp_path / "service.pem"
    key.write_bytes(
        service_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    admin = AsyncClient()
    await admin.aforce_login(admin_user)
    fields = admin_form(
        url=service_url,
        credentials_client_id=CLIENT_ID,
        credentials_method="private_key_jwt",
        credentials_file=str(key),
        credentials_signing_algorithm="ES256",
        credentials_issuer=service_url.removesuffix("/mcp"),
    )
    assert (await admin.post(f"{SERVERS}add/", fields)).status_code == 302
    (spec,) = await configured_servers()
    assert spec.client_credentials["private_key_file"] == str(key)
    connection = await opened(sessions, spec)
    result = await connection.call("whoami", {})
    assert text_of(result) == f"you are {CLIENT_ID}"
    health = (await admin.get(f"{SERVERS}health/")).content.decode()
    assert f"client {CLIENT_ID} (private_key_jwt), private key from the file {key}" in health
    assert "BEGIN PRIVATE KEY" not in health


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            {"credentials_method": "client_secret_jwt"},
            "Select a valid choice. client_secret_jwt is not one of the available choices.",
        ),
        (
            {"credentials_env": "GLASSBOX_NO_SUCH_SECRET"},
            "the environment variable &#x27;GLASSBOX_NO_SUCH_SECRET&#x27; is not set",
        ),
        (
            {"credentials_env": "", "credentials_file": "/no/such/secret"},
            "cannot read the file &#x27;/no/such/secret&#x27;",
        ),
        (
            {"credentials_file": "/etc/hostname"},
            "Name an environment variable or a file, not both.",
        ),
        ({"credentials_env": ""}, "Name the environment variable (or the file) that holds"),
        ({"credentials_client_id": ""}, "Give the client id Glassbox is registered as."),
        ({"credentials_method": ""}, "Choose how Glassbox proves it is this client."),
        (
            {"credentials_signing_algorithm": "ES256"},
            "&#x27;signing_algorithm&#x27; is for a private key",
        ),
        (
            {"credentials_issuer": "auth.example"},
            "&#x27;issuer&#x27; is the authorization server&#x27;s http:// or https://",
        ),
        (
            {"transport": "stdio", "url": "", "command": "/bin/true"},
            "&#x27;client_credentials&#x27; is for streamable HTTP servers",
        ),
    ],
)
def test_a_bad_client_credentials_entry_in_the_admin_form_says_what_is_wrong_and_saves_nothing(
    admin_client, monkeypatch, fields, problem
):
    monkeypatch.setenv(SECRET_VARIABLE, CLIENT_SECRET)
    entered = {
        "credentials_client_id": CLIENT_ID,
        "credentials_method": "client_secret_basic",
        "credentials_env": SECRET_VARIABLE,
        **fields,
    }
    page = admin_client.post(f"{SERVERS}add/", admin_form(**entered))
    assert page.status_code == 200
    assert problem in page.content.decode()
    assert CLIENT_SECRET not in page.content.decode()
    assert not McpServer.objects.exists() and not McpServerChange.objects.exists()


@pytest.mark.asyncio
async def test_a_removed_or_changed_declaration_never_sends_its_old_token_again(
    sessions, service_url
):
    grant = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
    spec = machine(service_url, **grant)

    async def token_number(spec: ServerSpec) -> int:
        connection = await opened(sessions, spec)
        assert isinstance(connection.state, connections.Connected), connection.reason
        result = await connection.call("token_number", {})
        return int(text_of(result))

    first = await token_number(spec)
    assert await token_number(spec) == first  # the same session, the same token
    await sessions.open([])  # removed: its token goes with it
    again = await token_number(spec)
    assert again > first
    changed = await token_number(machine(service_url, **grant, method="client_secret_post"))
    assert changed > again
    wrong = await opened(sessions, machine(service_url, client_id=CLIENT_ID, client_secret="no"))
    assert str(wrong.reason) == "its authorization server refused to issue a token"
