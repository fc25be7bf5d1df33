"""The admin's two ways of showing rows the apps write themselves: a record an admin reads and
never adds or edits (`ReadOnlyAdmin`), and one nobody deletes here either (`RecordAdmin`:
audit data that goes with its conversation or account, by their own rules). Here, below the
apps, because chat, its MCP servers and activity all show such rows."""

from __future__ import annotations

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RecordAdmin(ReadOnlyAdmin):
    def has_delete_permission(self, request, obj=None):
        return False
