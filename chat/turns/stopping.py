"""Stop: a running turn ends on purpose (`stopped`, not failed), wherever it runs; a waiting
one at once."""

from __future__ import annotations

import uuid

from activity.writing import feeds
from chat.models import Message
from chat.turns import registry, resuming


async def stop(*, conversation_id: uuid.UUID, answer_id: int) -> bool:
    """Stops a running turn on purpose: at once if this process runs it, otherwise at the
    running process's next heartbeat; a waiting turn ends at once. False when that answer is
    not running."""
    row = await (
        Message.objects.filter(
            pk=answer_id, conversation_id=conversation_id, state__in=Message.OPEN_STATES
        )
        .values_list("feed_id", "state")
        .afirst()
    )
    if row is None:
        return False
    feed_id, state = row
    if state == Message.State.WAITING:
        return await resuming.stop_waiting(answer_id) or await stop(
            conversation_id=conversation_id, answer_id=answer_id
        )
    # Marked as the owner's Stop, here or by the running process's heartbeat: the runner
    # ends it `stopped`, where any other cancellation of its task ends it `interrupted`.
    if not registry.stop(answer_id):
        await feeds.request_stop(feed_id)
    return True
