"""The one change to who reaches conversations that no model signal announces: the bulk
updates that delete them (services.conversation_delete, erasure.account_erase). Whatever
depended on reaching them listens here (chat.socket.revocation closes their sockets)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with `conversation_ids`, inside the transaction that closes them.
conversations_closed = Signal()
