"""Where the demo's send_email tool puts its mail: a table admins can read, never a mailbox.
Each e-mail belongs to the person whose turn sent it (the tool's context says who), so erasing
the account erases it (chat.conversations.erasure)."""

from __future__ import annotations

from chat.models import OutboxEmail


async def outbox_add(*, owner_id: int, to: str, subject: str, body: str) -> OutboxEmail:
    return await OutboxEmail.objects.acreate(owner_id=owner_id, to=to, subject=subject, body=body)
