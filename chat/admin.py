from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.template.response import TemplateResponse

from chat.conversations.erasure import ErasureRefused, account_erase, terms
from chat.conversations.sealed_records import approval_integrity, question_integrity
from chat.conversations.services import conversation_delete
from chat.models import (
    ContactRequest,
    Conversation,
    Document,
    Elicitation,
    Message,
    OutboxEmail,
    ToolApproval,
)
from project.read_only_admin import ReadOnlyAdmin, RecordAdmin


class MessageInline(admin.TabularInline):
    model = Message
    fields = readonly_fields = ("role", "state", "content", "feed", "created_at")
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


class DeletedFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [("live", "Live"), ("archived", "Archived"), ("deleted", "Deleted, retained")]

    def queryset(self, request, queryset):
        if self.value() == "live":
            return queryset.filter(deleted_at__isnull=True, archived_at__isnull=True)
        if self.value() == "archived":
            return queryset.filter(deleted_at__isnull=True, archived_at__isnull=False)
        if self.value() == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        return queryset


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """Admins see deleted conversations too, marked, until purge_deleted removes them."""

    list_display = ["title", "owner", "created_at", "updated_at", "status", "purge_after"]
    list_filter = [DeletedFilter]
    list_select_related = ["owner"]
    search_fields = ["title", "owner__username"]
    readonly_fields = ["id", "owner", "created_at", "updated_at", "archived_at", "deleted_at"]
    inlines = [MessageInline]
    show_full_result_count = False

    def get_queryset(self, request):
        return Conversation.all_objects.select_related("owner")

    # Deleting here is the owner's delete: hidden at once, kept for the audit until the
    # retention period ends (purge_deleted), never removed on the spot with its feeds dangling.
    def delete_model(self, request, obj):
        conversation_delete(conversation=obj)

    def delete_queryset(self, request, queryset):
        for conversation in queryset:
            conversation_delete(conversation=conversation)

    def get_deleted_objects(self, objs, request):
        days = settings.GLASSBOX_RETENTION_DAYS
        shown = [
            f"{conversation} — hidden from its owner now, removed for good {days} days later"
            for conversation in objs
        ]
        return shown, {"conversations": len(shown)}, set(), []

    @admin.display(description="status")
    def status(self, conversation):
        if conversation.deleted_at:
            return "🗑 deleted (retained for audit)"
        return "archived" if conversation.archived_at else "live"

    @admin.display(description="removed for good after")
    def purge_after(self, conversation):
        if not conversation.deleted_at:
            return "—"
        return conversation.deleted_at + timedelta(days=settings.GLASSBOX_RETENTION_DAYS)


@admin.register(Message)
class MessageAdmin(RecordAdmin):
    """A turn's messages go with their conversation, after its retention period."""

    list_display = ["id", "conversation", "role", "state", "created_at"]
    list_filter = ["role", "state"]
    list_select_related = ["conversation"]
    readonly_fields = ["conversation", "role", "state", "feed", "content", "created_at"]
    show_full_result_count = False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "language", "updated_at"]
    list_filter = ["language"]
    search_fields = ["title", "body"]


class AskedDuringATurnAdmin(ReadOnlyAdmin):
    """What a turn asked its owner while it ran (a call to approve, a server's question),
    each row compared with what its feed's chain sealed as the page is read (one query a
    row; manage.py verify_audit checks them all)."""

    # Each row on the list is checked against its feed: a page of them stays short.
    list_per_page = 50

    @admin.display(description="owner")
    def owner(self, row):
        return row.answer.conversation.owner

    def problem(self, row) -> tuple[bool, str]:
        """Whether the feed sealed the row, and what of it does not match ("": nothing)."""
        raise NotImplementedError

    @admin.display(description="integrity")
    def integrity(self, row):
        sealed, problem = self.problem(row)
        if problem:
            return f"✘ BROKEN: {problem}"
        if not sealed:
            return "— not sealed: it ended without its line in the feed"
        return "✔ intact: as its feed's chain sealed it"


@admin.register(ToolApproval)
class ToolApprovalAdmin(AskedDuringATurnAdmin):
    """Tool calls that asked first, and what became of them (the feed has each decision)."""

    list_display = ["asked_at", "tool", "call_id", "owner", "decision", "decided_by", "reason",
                    "integrity"]  # fmt: skip
    list_filter = ["decision", "tool"]
    list_select_related = ["answer__conversation__owner", "decided_by"]
    search_fields = ["tool", "call_id", "reason", "answer__conversation__owner__username"]
    readonly_fields = ["answer", "call_id", "tool", "title", "arguments", "fingerprint",
                       "asked_at", "deadline", "decision", "decided_at", "decided_by", "reason",
                       "edited_arguments", "app_of", "integrity"]  # fmt: skip
    exclude = ["state", "parameters"]

    def problem(self, row):
        return True, approval_integrity(row)


@admin.register(Elicitation)
class ElicitationAdmin(AskedDuringATurnAdmin):
    """MCP servers' questions and their answers: who answered what, and when (the feed has a
    sealed line for each). A field the server marked sensitive is kept as its SHA-256."""

    list_display = ["asked_at", "server", "mode", "owner", "state", "answered_by", "answered_at",
                    "integrity"]  # fmt: skip
    list_filter = ["state", "mode", "server"]
    list_select_related = ["answer__conversation__owner", "answered_by"]
    search_fields = ["server", "call_id", "message", "answered_by__username"]
    readonly_fields = ["id", "answer", "call_id", "server", "mode", "message", "requested_schema",
                       "url", "server_elicitation_id", "asked_at", "deadline", "state", "content",
                       "answered_at", "answered_by", "reason", "completed_at",
                       "integrity"]  # fmt: skip

    def problem(self, row):
        return question_integrity(row)


@admin.register(OutboxEmail)
class OutboxEmailAdmin(ReadOnlyAdmin):
    """The demo's send_email tool writes here and nowhere else."""

    list_display = ["created_at", "to", "subject"]
    search_fields = ["to", "subject", "body"]
    readonly_fields = ["owner", "to", "subject", "body", "created_at"]


@admin.register(ContactRequest)
class ContactRequestAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "name", "email", "owner", "message"]
    list_select_related = ["owner", "message"]
    search_fields = ["name", "email", "body", "owner__username"]
    date_hierarchy = "created_at"
    readonly_fields = ["owner", "message", "name", "email", "body", "created_at"]


class AccountAdmin(UserAdmin):
    """Accounts with turns cannot be deleted (their feeds are audit data): they are erased,
    with a confirmation page that says what goes and what the audit keeps."""

    actions = ["erase_accounts"]

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Erase selected accounts", permissions=["change"])
    def erase_accounts(self, request, queryset):
        if request.POST.get("confirmed") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": "Erase accounts",
                "accounts": queryset,
                "terms": terms(),
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/auth/user/erase_confirmation.html", context)
        for user in queryset:
            try:
                left_as = account_erase(user=user)
            except ErasureRefused as refusal:
                self.message_user(request, str(refusal), messages.ERROR)
            else:
                self.message_user(request, f"Erased; the audit shows it as {left_as}.")
        return None


admin.site.unregister(User)
admin.site.register(User, AccountAdmin)
