from __future__ import annotations

from django.contrib import admin

from chat.models import ContactRequest, Conversation, Document, Message


class MessageInline(admin.TabularInline):
    model = Message
    fields = ["role", "state", "content", "feed", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "created_at", "updated_at"]
    list_select_related = ["owner"]
    search_fields = ["title", "owner__username"]
    readonly_fields = ["id", "owner", "created_at", "updated_at"]
    inlines = [MessageInline]
    show_full_result_count = False


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["id", "conversation", "role", "state", "created_at"]
    list_filter = ["role", "state"]
    list_select_related = ["conversation"]
    readonly_fields = ["conversation", "role", "state", "feed", "content", "created_at"]
    show_full_result_count = False

    def has_add_permission(self, request):
        return False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "language", "updated_at"]
    list_filter = ["language"]
    search_fields = ["title", "body"]


@admin.register(ContactRequest)
class ContactRequestAdmin(admin.ModelAdmin):
    list_display = ["created_at", "name", "email", "owner", "message"]
    list_select_related = ["owner", "message"]
    search_fields = ["name", "email", "body", "owner__username"]
    date_hierarchy = "created_at"
    readonly_fields = ["owner", "message", "name", "email", "body", "created_at"]

    def has_add_permission(self, request):
        return False
