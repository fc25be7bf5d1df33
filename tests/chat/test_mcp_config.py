"""Declaring MCP servers: in settings (checked at start-up) and in the admin (secrets never
shown back)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from asgiref.sync import async_to_sync

from chat.agent.mcp.config import ServerConfigError, specs_from_setting
from chat.servers.configured import configured_servers, forget
from chat.servers.models import McpServer, McpServerChange
from tests.support.mcp import ROOT, stdio

SECRET = "Bearer s3cr3t-t0ken"


def test_a_list_in_the_setting_declares_servers_of_both_transports():
    specs = specs_from_setting(
        json.dumps(
            [
                {"name": "surveys", "url": "http://127.0.0.1:9000/mcp",
                 "headers": {"Authorization": SECRET}},
                {"name": "local", "command": "python", "args": ["server.py"], "env": {},
                 "tools": ["compare"], "approval": ["compare"]},
            ]
        )
    )  # fmt: skip
    http, local = specs
    assert (http.transport, http.headers, http.tools) == ("http", {"Authorization": SECRET}, None)
    assert (local.transport, local.args, local.tools, local.approval) == (
        "stdio", ("server.py",), frozenset({"compare"}), frozenset({"compare"}),
    )  # fmt: skip
    assert SECRET not in repr(http)


def test_the_setting_may_name_a_file(tmp_path):
    path = tmp_path / "servers.json"
    path.write_text(json.dumps([{"name": "x", "url": "https://tools.example/mcp"}]))
    assert [spec.name for spec in specs_from_setting(str(path))] == ["x"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{", "not valid JSON"),
        ('{"name": "x"}', "expected a JSON list of servers"),
        ('[{"name": "a b", "url": "http://x"}]', "'name' must be 1-24 letters"),
        ('[{"name": "x"}]', "give either 'url' (HTTP) or 'command' (stdio)"),
        ('[{"name": "x", "url": "http://x", "command": "y"}]', "give either 'url'"),
        ('[{"name": "x", "url": "ftp://x"}]', "'url' must be an http:// or https:// URL"),
        ('[{"name": "x", "url": "http://x", "headers": {"A": 1}}]', "'headers' must be an object"),
        ('[{"name": "x", "command": "y", "headers": {}}]', "'headers' are for HTTP servers"),
        ('[{"name": "x", "command": "y", "tools": "all"}]', "'tools' must be a list of strings"),
        ('[{"name": "x", "command": "y", "colour": 1}]', "unknown field 'colour'"),
        ('[{"name": "x", "command": "y", "transport": "sse"}]', "'transport' is for HTTP"),
        ('[{"name": "x", "url": "http://x", "transport": "ws"}]', "'streamable-http' or 'sse'"),
        ('[{"name": "x", "command": "y"}, {"name": "x", "command": "z"}]', "declared twice"),
        ("/no/such/file.json", "cannot read the file"),
        ('[{"name": "x", "command": "y", "sampling": "yes"}]', "'sampling' must be true or false"),
    ],
)
def test_a_bad_declaration_says_what_is_wrong(value, problem):
    with pytest.raises(ServerConfigError, match=re.escape(problem)):
        specs_from_setting(value)


def test_a_url_ending_in_sse_is_the_legacy_transport_unless_transport_says_otherwise():
    legacy, modern, told = specs_from_setting(
        json.dumps(
            [
                {"name": "a", "url": "http://tools.example/sse"},
                {"name": "b", "url": "http://tools.example/sse", "transport": "streamable-http"},
                {"name": "c", "url": "http://tools.example/events", "transport": "sse"},
            ]
        )
    )
    assert [legacy.transport, modern.transport, told.transport] == ["sse", "http", "sse"]
    assert legacy.fingerprint != modern.fingerprint


@pytest.mark.own_site
def test_a_bad_setting_stops_start_up_naming_the_setting():
    secret_value = json.dumps([{"name": "x", "url": "ftp://x", "headers": {"A": SECRET}}])
    run = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "GLASSBOX_MCP_SERVERS": secret_value},
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0
    assert (
        "GLASSBOX_MCP_SERVERS: server 'x': 'url' must be an http:// or https:// URL" in run.stderr
    )
    assert SECRET not in run.stderr


ADD = "/admin/servers/mcpserver/add/"


def form(**fields) -> dict:
    return {
        "name": "surveys", "transport": "http", "url": "https://tools.example/mcp",
        "command": "", "enabled": "on", "headers_text": "", "args_text": "", "env_text": "",
        "tools_text": "", "approval_text": "", **fields,
    }  # fmt: skip


def test_admins_add_a_server_and_never_see_its_secrets_again(admin_client, db):
    added = admin_client.post(ADD, form(headers_text=f"Authorization: {SECRET}"))
    assert added.status_code == 302
    row = McpServer.objects.get()
    assert row.headers == {"Authorization": SECRET}

    change = f"/admin/servers/mcpserver/{row.pk}/change/"
    page = admin_client.get(change).content.decode()
    assert SECRET not in page and "Authorization: ••••••" in page
    listing = admin_client.get("/admin/servers/mcpserver/").content.decode()
    assert SECRET not in listing and "https://tools.example/mcp" in listing

    kept = admin_client.post(
        change, form(headers_text="Authorization: ••••••\nX-Team: blue", tools_text="compare")
    )
    assert kept.status_code == 302
    row.refresh_from_db()
    assert row.headers == {"Authorization": SECRET, "X-Team": "blue"}
    assert row.tools == ["compare"]
    history = admin_client.get(f"{change}history/").content.decode()
    assert SECRET not in history


def test_the_admin_form_refuses_what_settings_would_refuse(admin_client, settings, db):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    cases = [
        (form(url=""), "give either"),
        (form(name="no spaces"), "must be 1-24 letters"),
        (form(name="bench"), "GLASSBOX_MCP_SERVERS already declares"),
        (form(headers_text="Authorization: ••••••"), "has no stored value to keep"),
        (form(headers_text="just a line"), "write it as Name: value"),
        (form(transport="stdio", url="", command=""), "give either"),
    ]
    for data, problem in cases:
        page = admin_client.post(ADD, data)
        assert page.status_code == 200, problem
        assert problem in page.content.decode(), problem
    assert not McpServer.objects.exists()


def test_sampling_is_off_unless_declared_and_switching_it_opens_a_new_session():
    off, on = specs_from_setting(
        '[{"name": "a", "command": "y"}, {"name": "b", "command": "y", "sampling": true}]'
    )
    assert not off.sampling and on.sampling
    # The capability is declared when a session opens: another declaration, another session.
    assert off.fingerprint != on.fingerprint


def test_admins_switch_sampling_per_server_on_the_record(admin_client, admin_user, db):
    assert admin_client.post(ADD, form()).status_code == 302
    row = McpServer.objects.get()
    assert not row.sampling
    assert not async_to_sync(configured_servers)()[0].sampling

    change = f"/admin/servers/mcpserver/{row.pk}/change/"
    assert "Let this server ask the model" in admin_client.get(change).content.decode()
    assert admin_client.post(change, form(sampling="on")).status_code == 302
    row.refresh_from_db()
    assert row.sampling
    forget()
    assert async_to_sync(configured_servers)()[0].sampling
    record = McpServerChange.objects.order_by("-id").first()
    assert record is not None and record.fields == ["sampling"]


def test_settings_and_admin_servers_are_used_together(settings, db):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    McpServer.objects.create(name="bench", transport="http", url="http://shadowed.example/mcp")
    McpServer.objects.create(name="team", transport="stdio", command="team-server", args=["-v"])
    McpServer.objects.create(name="off", transport="http", url="http://x.example", enabled=False)

    specs = {spec.name: spec for spec in async_to_sync(configured_servers)()}

    assert sorted(specs) == ["bench", "team"]
    assert specs["bench"].transport == "stdio"  # the setting wins over a row of its name
    assert (specs["team"].command, specs["team"].args) == ("team-server", ("-v",))
