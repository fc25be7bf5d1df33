"""An erased account can no longer be acted for at any MCP server: its grants are
disconnected (each recorded), and a client registered at a server it never finished
connecting to and the authorizations it waited for are deleted. Erasure
(chat.conversations.erasure) says so through a signal: it knows nothing of this app."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from chat.conversations.access import account_erased
from chat.servers.grants import connected, disconnect
from chat.servers.models import McpConsent, McpGrant


@receiver(account_erased)
def forget_connections(sender: type, user: Any, **kwargs: Any) -> None:
    for grant in connected(user.pk):
        disconnect(user_id=user.pk, server=grant.server, detail="account erased")
    McpGrant.objects.filter(user=user).delete()
    McpConsent.objects.filter(user=user).delete()
