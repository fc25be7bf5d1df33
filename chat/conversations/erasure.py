"""Erasing an account: what goes at once, what the audit keeps and in what form, stated once
for the admin's confirmation page, `manage.py erase_user` and docs/audit.md."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from activity.writing import feeds
from chat.conversations.access import account_erased, conversations_closed
from chat.models import (
    ContactRequest,
    Conversation,
    Elicitation,
    Message,
    OutboxEmail,
    ToolApproval,
)


class ErasureRefused(Exception):
    """The account cannot be erased now; the text says why."""


def terms() -> list[str]:
    days = settings.GLASSBOX_RETENTION_DAYS
    return [
        "At once: the username, name, email and password are replaced (the account is "
        "renamed erased-<id>, deactivated and cannot log in; its sessions stop working), and "
        "its API token, preferences, contact requests, outbox e-mails and connections to MCP "
        "servers (their OAuth tokens and client registrations) are deleted.",
        "At once: every question, answer and title of its conversations is emptied, and the "
        "conversations are deleted as their owner would delete them; so are the arguments, "
        "edits, fingerprints and reasons of its approvals and the text, address and answer of "
        "every MCP server's question to it.",
        "Kept for the audit: each turn's feed as a skeleton (which tools ran, when, for how "
        "long, whether they failed, who decided and when), with every text, argument, result "
        "(structured results and links too), progress message, reasoning and error removed "
        "and the user shown as erased-<id>; their hash chains are sealed again, and the audit "
        "records that they were.",
        f"Removed for good: those skeletons and conversations, {days} days later "
        "(manage.py purge_deleted), as for any deleted conversation.",
    ]


@transaction.atomic
def account_erase(*, user: Any) -> str:
    """Erases one account as `terms()` says; returns the name it is left under."""
    if Message.objects.filter(conversation__owner=user, state__in=Message.OPEN_STATES).exists():
        raise ErasureRefused(f"{user} has an answer running; stop it or let it end first.")
    now = timezone.now()
    conversations = Conversation.all_objects.filter(owner=user)
    Message.objects.filter(conversation__in=conversations).update(content="", client_id=None)
    # What the turns asked their owner keeps who decided and when, none of what was asked,
    # edited, answered or said (the decisions' and answers' lines are emptied with the feed's).
    ToolApproval.objects.filter(answer__conversation__in=conversations).update(
        arguments={}, state={}, reason="", fingerprint="", parameters=None, edited_arguments=None
    )
    Elicitation.objects.filter(answer__conversation__in=conversations).update(
        message="", requested_schema={}, url="", content=None, reason=""
    )
    conversations.update(title="", deleted_at=now)
    # Their chains and closings no longer match what they hold: sealed again, and the reseal
    # recorded (activity.writing.feeds.erase_for).
    feeds.erase_for(user, reason=f"account erasure of user {user.pk}")
    ContactRequest.objects.filter(owner=user).delete()
    OutboxEmail.objects.filter(owner=user).delete()
    Token.objects.filter(user=user).delete()
    # Its connections to MCP servers (chat.servers.erased), in this transaction.
    account_erased.send(type(user), user=user)
    user.username = f"erased-{user.pk}"
    user.first_name = user.last_name = user.email = ""
    user.is_active = user.is_staff = user.is_superuser = False
    user.set_unusable_password()  # also ends every session: their hash no longer matches
    user.save()
    # A bulk update sends no model signal: their open sockets are told here.
    conversations_closed.send(
        Conversation, conversation_ids=list(conversations.values_list("pk", flat=True))
    )
    user.groups.clear()
    user.user_permissions.clear()
    return user.username
