"""Where the demo's send_email tool puts its mail: a table admins can read, never a mailbox."""

from __future__ import annotations

from chat.models import OutboxEmail


async def outbox_add(*, to: str, subject: str, body: str) -> OutboxEmail:
    return await OutboxEmail.objects.acreate(to=to, subject=subject, body=body)
