"""The MCP models moved from chat to the servers app with their tables: a database migrated
before the move keeps its servers, grants and records, read through the new models, and the
staff who were given permissions on them keep them. Run on SQLite and on PostgreSQL
(DATABASE_URL)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.apps.registry import Apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from chat.servers.models import McpGrant, McpGrantRecord, McpServer, McpServerSighting

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("chat", "0015_tool_approval_title"), ("servers", None)]
MODELS = ["mcpserver", "mcpserverchange", "mcpgrant", "mcpconsent", "mcpgrantrecord",
          "mcpserversighting"]  # fmt: skip


def migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    # The process's cache still knows the content types under their old ids and labels.
    ContentType.objects.clear_cache()


@pytest.fixture
def before_the_move() -> Iterator[Apps]:
    """The models as a database that last migrated before the move has them."""
    yield MigrationExecutor(connection).migrate(BEFORE).apps
    migrate_to_latest()  # whatever the test did, the next one finds the schema it expects


def permission(apps: Apps, label: str, codename: str) -> Any:
    """The permission as post_migrate makes it, under the given app label."""
    content_type, _ = apps.get_model("contenttypes", "ContentType").objects.get_or_create(
        app_label=label, model=codename.split("_", 1)[1]
    )
    found, _ = apps.get_model("auth", "Permission").objects.get_or_create(
        content_type=content_type, codename=codename, defaults={"name": codename}
    )
    return found


def staff(apps: Apps, username: str) -> Any:
    return apps.get_model("auth", "User").objects.create(username=username, is_staff=True)


def test_the_rows_written_before_the_move_are_read_through_the_new_models(before_the_move):
    old = before_the_move
    alice = old.get_model("auth", "User").objects.create(username="alice")
    server = old.get_model("chat", "McpServer").objects.create(
        name="wiki", url="https://wiki.example/mcp", headers={"Authorization": "secret"}
    )
    old.get_model("chat", "McpGrant").objects.create(
        user=alice, server="wiki", tokens="sealed", scopes="read"
    )
    old.get_model("chat", "McpGrantRecord").objects.create(
        user=alice, server="wiki", action="granted", scopes="read"
    )
    old.get_model("chat", "McpServerSighting").objects.create(
        worker="host:1", server="wiki", state="up", started_at="2026-01-01T00:00Z",
        updated_at="2026-01-01T00:00Z",
    )  # fmt: skip

    migrate_to_latest()

    moved = McpServer.objects.get(name="wiki")
    assert (moved.pk, moved.url, moved.headers) == (
        server.pk, "https://wiki.example/mcp", {"Authorization": "secret"}
    )  # fmt: skip
    user = get_user_model().objects.get(username="alice")
    assert [(g.server, g.tokens, g.scopes) for g in user.mcp_grants.all()] == [
        ("wiki", "sealed", "read")
    ]
    assert McpGrantRecord.objects.get(user=user).action == McpGrantRecord.Action.GRANTED
    assert McpServerSighting.objects.get(server="wiki").state == "up"
    # The table's ids go on from the rows it kept.
    assert McpServer.objects.create(name="next").pk > server.pk
    assert McpGrant.objects.filter(user__username="alice").count() == 1


def test_staff_keep_the_permissions_they_were_given_on_the_moved_models(before_the_move):
    old = before_the_move
    operator = staff(old, "operator")
    operator.user_permissions.add(permission(old, "chat", "change_mcpserver"))
    auditors = old.get_model("auth", "Group").objects.create(name="auditors")
    auditors.permissions.add(permission(old, "chat", "view_mcpgrantrecord"))
    auditor = staff(old, "auditor")
    auditor.groups.add(auditors)

    migrate_to_latest()

    users = get_user_model().objects
    assert users.get(username="operator").has_perm("servers.change_mcpserver")
    assert users.get(username="auditor").has_perm("servers.view_mcpgrantrecord")
    assert not ContentType.objects.filter(app_label="chat", model__in=MODELS).exists()
    client = Client()
    client.force_login(users.get(username="operator"))
    assert client.get("/admin/servers/mcpserver/").status_code == 200
    client.force_login(users.get(username="auditor"))
    assert client.get("/admin/servers/mcpgrantrecord/").status_code == 200
    assert client.get("/admin/servers/mcpserver/").status_code == 403


def test_permissions_an_earlier_migrate_made_under_the_new_label_are_merged(before_the_move):
    """`migrate` creates the new label's content types after it runs (post_migrate): a
    deployment that ran it with the move only partly applied has both, and holders of
    either keep the permission."""
    old = before_the_move
    given_before = staff(old, "given-before")
    given_before.user_permissions.add(permission(old, "chat", "change_mcpserver"))
    given_after = staff(old, "given-after")
    given_after.user_permissions.add(permission(old, "servers", "change_mcpserver"))
    # One only the new label has: it moves over as it is.
    permission(old, "chat", "delete_mcpserver").delete()
    permission(old, "servers", "delete_mcpserver")

    migrate_to_latest()

    users = get_user_model().objects
    assert users.get(username="given-before").has_perm("servers.change_mcpserver")
    assert users.get(username="given-after").has_perm("servers.change_mcpserver")
    server_type = ContentType.objects.get(app_label="servers", model="mcpserver")
    assert sorted(server_type.permission_set.values_list("codename", flat=True)) == [
        "add_mcpserver", "change_mcpserver", "delete_mcpserver", "view_mcpserver"
    ]  # fmt: skip
    assert not ContentType.objects.filter(app_label="chat", model__in=MODELS).exists()


def test_undoing_chat_s_step_and_migrating_again_leaves_the_permissions_under_one_label(
    django_user_model,
):
    """`migrate chat 0015` undoes the move (and makes chat's content types again, from the
    state it leaves); `migrate` redoes it, merging them."""
    operator = django_user_model.objects.create(username="operator", is_staff=True)
    operator.user_permissions.add(Permission.objects.get(codename="change_mcpserver"))

    call_command("migrate", "chat", "0015_tool_approval_title", verbosity=0)
    call_command("migrate", verbosity=0)
    ContentType.objects.clear_cache()

    assert django_user_model.objects.get(pk=operator.pk).has_perm("servers.change_mcpserver")
    assert not ContentType.objects.filter(app_label="chat", model__in=MODELS).exists()
    assert Permission.objects.filter(codename="change_mcpserver").count() == 1


def test_undoing_the_move_gives_chat_its_permissions_back(before_the_move):
    ContentType.objects.clear_cache()
    content_type = ContentType.objects.get(app_label="chat", model="mcpserver")
    assert content_type.permission_set.filter(codename="change_mcpserver").exists()
    assert not ContentType.objects.filter(app_label="servers").exists()


def test_the_models_and_their_migrations_agree():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/admin/chat/mcpserver/", "/admin/servers/mcpserver/"),
        ("/admin/chat/mcpserver/health/", "/admin/servers/mcpserver/health/"),
        (
            "/admin/chat/mcpserverchange/?action=added",
            "/admin/servers/mcpserverchange/?action=added",
        ),
        ("/admin/chat/mcpgrant/7/change/", "/admin/servers/mcpgrant/7/change/"),
        ("/admin/chat/mcpgrantrecord/", "/admin/servers/mcpgrantrecord/"),
    ],
)
def test_the_admin_pages_old_addresses_lead_to_their_new_ones(admin_client, old, new):
    response = admin_client.get(old)
    assert (response.status_code, response["Location"]) == (301, new)
    assert admin_client.get(new, follow=True).status_code == 200


def test_chat_s_own_admin_pages_are_not_redirected(admin_client):
    assert admin_client.get("/admin/chat/message/").status_code == 200
    assert admin_client.get("/admin/chat/mcpthing/").status_code == 404
