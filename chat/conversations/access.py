"""The changes to who reaches what that no model signal announces: the bulk updates that
delete conversations (services.conversation_delete, erasure.account_erase), and an account's
erasure. Whatever depended on reaching them listens here (chat.socket.revocation closes
their sockets; chat.servers.erased forgets the account's grants at MCP servers)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with `conversation_ids`, inside the transaction that closes them.
conversations_closed = Signal()

# Sent with `user`, inside the transaction that erases the account, before it is renamed:
# what other apps hold for it goes in the same transaction (or stays, if erasure fails).
account_erased = Signal()
