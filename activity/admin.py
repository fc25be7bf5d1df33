"""Read-only audit of every feed and tool call."""

from __future__ import annotations

from django.contrib import admin

from activity.models import ActivityEvent, ActivityFeed


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ActivityEventInline(admin.TabularInline):
    model = ActivityEvent
    fields = [
        "seq",
        "kind",
        "icon",
        "message",
        "state",
        "tool",
        "call_id",
        "arguments",
        "ok",
        "result_summary",
        "error",
        "duration_ms",
        "created_at",
    ]
    readonly_fields = fields
    ordering = ["seq"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ActivityFeed)
class ActivityFeedAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "owner",
        "state",
        "summary_icon",
        "summary_text",
        "tool_call_count",
        "failed_tool_count",
        "started_at",
    ]
    list_filter = ["state", "started_at"]
    list_select_related = ["owner"]
    search_fields = ["owner__username", "summary_text", "events__message", "events__tool"]
    date_hierarchy = "started_at"
    show_full_result_count = False
    inlines = [ActivityEventInline]


@admin.register(ActivityEvent)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ["feed", "seq", "kind", "tool", "ok", "duration_ms", "created_at"]
    list_filter = ["kind", "tool", "ok"]
    list_select_related = ["feed"]
    show_full_result_count = False
