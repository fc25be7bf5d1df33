"""Users' grants at MCP servers in the admin, read-only: who is connected to which server
with which scopes, and the record of every grant, refresh, refusal and disconnection. No
token is ever shown (the encrypted columns are not even listed)."""

from __future__ import annotations

from django.contrib import admin

from chat.models import McpGrant, McpGrantRecord
from chat.read_only_admin import RecordAdmin


@admin.register(McpGrant)
class McpGrantAdmin(RecordAdmin):
    list_display = ["user", "server", "scopes", "connected_at", "refreshed_at"]
    list_filter = ["server"]
    list_select_related = ["user"]
    search_fields = ["server", "user__username"]
    fields = ("user", "server", "scopes", "connected_at", "refreshed_at")
    readonly_fields = fields


@admin.register(McpGrantRecord)
class McpGrantRecordAdmin(RecordAdmin):
    list_display = ["at", "user", "server", "action", "scopes", "detail"]
    list_filter = ["action", "server", "at"]
    list_select_related = ["user"]
    search_fields = ["server", "user__username"]
    date_hierarchy = "at"
    fields = ("at", "user", "server", "action", "scopes", "detail")
    readonly_fields = fields
