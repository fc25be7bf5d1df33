"""Where the demo's send_email tool puts its mail: a table admins can read, never a mailbox.
Each e-mail belongs to the owner of the turn that sent it, so erasing the account erases it
(chat.conversations.erasure)."""

from __future__ import annotations

import contextvars

from chat.models import OutboxEmail

# The owner of the turn this task runs (chat.turns.runner sets it): the agent's tools know no
# users, and a turn's tools run in its task.
sending_for: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "outbox_sending_for", default=None
)


async def outbox_add(*, to: str, subject: str, body: str) -> OutboxEmail:
    return await OutboxEmail.objects.acreate(
        owner_id=sending_for.get(), to=to, subject=subject, body=body
    )
