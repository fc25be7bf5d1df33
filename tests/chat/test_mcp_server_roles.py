"""Running programs on the host is a superuser's decision: admins who may manage MCP servers
add and change HTTP servers only, stdio servers are read-only to them on every path of the
admin, and every change to a server is recorded with who made it and when."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from chat.servers.configured import configured_servers
from chat.servers.models import McpServer, McpServerChange

pytestmark = pytest.mark.django_db

SERVERS = "/admin/servers/mcpserver/"
ADD = f"{SERVERS}add/"
CHANGES = "/admin/servers/mcpserverchange/"
SECRET = "s3cr3t-value-never-shown"
REFUSED = "Only superusers may add, change or delete stdio servers"


def form(**fields) -> dict:
    return {
        "name": "surveys", "transport": "http", "url": "https://tools.example/mcp",
        "command": "", "enabled": "on", "headers_text": "", "args_text": "", "env_text": "",
        "tools_text": "", "approval_text": "", **fields,
    }  # fmt: skip


SHELL = form(name="owned", transport="stdio", url="", command="/bin/sh",
             args_text="-c\nid > owned.txt")  # fmt: skip


def staff_with(codenames: str):
    user = get_user_model().objects.create_user("mallory", password="x", is_staff=True)
    permissions = Permission.objects.filter(content_type__app_label="servers")
    user.user_permissions.add(*permissions.filter(codename__regex=codenames))
    return user


@pytest.fixture
def manager(db):
    """Staff with every permission on MCP servers, but not a superuser."""
    return staff_with(r"^(add|change|view|delete)_mcpserver$")


@pytest.fixture
def manager_client(client, manager):
    client.force_login(manager)
    return client


@pytest.fixture
def stdio_server(db):
    return McpServer.objects.create(
        name="local", transport="stdio", command="local-tools", args=["-v"], env={"KEY": SECRET}
    )


def configured_names() -> set[str]:
    return {spec.name for spec in async_to_sync(configured_servers)()}


@pytest.mark.parametrize("codenames", [r"^add_mcpserver$", r"_mcpserver$"])
def test_adding_a_stdio_server_without_being_a_superuser_is_refused_and_runs_nothing(
    client, codenames
):
    client.force_login(staff_with(codenames))
    assert "stdio is for superusers only." in client.get(ADD).content.decode()
    page = client.post(ADD, SHELL)
    assert page.status_code == 200
    assert REFUSED in page.content.decode()
    assert not McpServer.objects.exists() and not McpServerChange.objects.exists()
    assert "owned" not in configured_names()


def test_an_http_server_cannot_be_turned_into_a_stdio_one_without_being_a_superuser(
    manager_client, manager
):
    assert manager_client.post(ADD, form()).status_code == 302
    row = McpServer.objects.get()
    page = manager_client.post(f"{SERVERS}{row.pk}/change/", {**SHELL, "name": "surveys"})
    assert REFUSED in page.content.decode()
    row.refresh_from_db()
    assert (row.transport, row.command, row.args) == ("http", "", [])
    assert list(McpServerChange.objects.values_list("action", flat=True)) == ["added"]


def test_a_stdio_server_is_read_only_to_them_on_every_path(manager_client, stdio_server):
    change = f"{SERVERS}{stdio_server.pk}/change/"
    page = manager_client.get(change)
    html = page.content.decode()
    assert page.status_code == 200 and SECRET not in html
    assert "local-tools" in html and "-v" in html and "KEY: ••••••" in html
    assert 'name="_save"' not in html and 'name="command"' not in html
    assert manager_client.post(
        change, form(name="local", url="https://x.example")
    ).status_code == (403)
    assert manager_client.post(f"{change[:-7]}delete/", {"post": "yes"}).status_code == 403
    selected = {"_selected_action": [stdio_server.pk], "post": "yes"}
    for action in ("delete_selected", "disable_servers"):
        manager_client.post(SERVERS, {**selected, "action": action}, follow=True)
    stdio_server.refresh_from_db()
    assert stdio_server.enabled and stdio_server.command == "local-tools"
    assert not McpServerChange.objects.exists()
    refused = manager_client.post(SERVERS, {**selected, "action": "disable_servers"}, follow=True)
    assert REFUSED in refused.content.decode() and "Nothing was changed (local)" in (
        refused.content.decode()
    )


def test_they_manage_http_servers_and_each_change_is_recorded(manager_client, manager):
    assert manager_client.post(ADD, form(headers_text=f"Authorization: {SECRET}")).status_code == (
        302
    )
    row = McpServer.objects.get()
    change = f"{SERVERS}{row.pk}/change/"
    kept = form(headers_text="Authorization: ••••••", url="https://other.example/mcp")
    assert manager_client.post(change, kept).status_code == 302
    assert manager_client.post(change, kept).status_code == 302  # nothing changed: no record
    selected = {"_selected_action": [row.pk]}
    manager_client.post(SERVERS, {**selected, "action": "disable_servers"})
    manager_client.post(SERVERS, {**selected, "action": "enable_servers"})
    manager_client.post(SERVERS, {**selected, "action": "delete_selected", "post": "yes"})
    assert not McpServer.objects.exists()

    records = list(McpServerChange.objects.order_by("id"))
    assert [(r.action, r.fields) for r in records] == [
        ("added", []),
        ("changed", ["url"]),
        ("disabled", ["enabled"]),
        ("enabled", ["enabled"]),
        ("deleted", []),
    ]
    assert {r.by for r in records} == {manager} and all(r.server == "surveys" for r in records)
    assert records[-1].declaration["url"] == "https://other.example/mcp"
    assert records[-1].declaration["headers"] == {"Authorization": "••••••"}

    listing = manager_client.get(CHANGES).content.decode()
    assert "mallory" in listing and "disabled" in listing and SECRET not in listing
    detail = manager_client.get(f"{CHANGES}{records[0].pk}/change/").content.decode()
    assert SECRET not in detail and "https://tools.example/mcp" in detail


def test_superusers_add_change_and_delete_stdio_servers_on_the_record(admin_client, admin_user):
    assert admin_client.post(ADD, SHELL).status_code == 302
    row = McpServer.objects.get()
    assert (row.command, row.args) == ("/bin/sh", ["-c", "id > owned.txt"])
    assert "owned" in configured_names()
    change = f"{SERVERS}{row.pk}/change/"
    assert admin_client.post(change, {**SHELL, "args_text": "-c\ntrue"}).status_code == 302
    assert admin_client.post(f"{SERVERS}{row.pk}/delete/", {"post": "yes"}).status_code == 302
    records = McpServerChange.objects.order_by("id")
    assert [(r.action, r.fields, r.by) for r in records] == [
        ("added", [], admin_user),
        ("changed", ["args"], admin_user),
        ("deleted", [], admin_user),
    ]
    assert records[0].declaration["command"] == "/bin/sh"


def test_the_record_cannot_be_added_changed_or_deleted(admin_client, manager_client):
    manager_client.post(ADD, form())
    record = McpServerChange.objects.get()
    assert admin_client.get(f"{CHANGES}add/").status_code == 403
    assert admin_client.post(f"{CHANGES}{record.pk}/delete/", {"post": "yes"}).status_code == 403
    admin_client.post(f"{CHANGES}{record.pk}/change/", {"server": "renamed"})
    record.refresh_from_db()
    assert record.server == "surveys"
    record.server = "rewritten"
    with pytest.raises(ValueError, match="append-only"):
        record.save()
    with pytest.raises(ValueError, match="append-only"):
        record.delete()


def test_staff_who_may_not_see_servers_see_no_record_of_them(manager_client):
    manager_client.post(ADD, form())
    clerk = get_user_model().objects.create_user("clerk", password="x", is_staff=True)
    other = Client()
    other.force_login(clerk)
    assert other.get(CHANGES).status_code == 403
    assert other.get(SERVERS).status_code == 403
