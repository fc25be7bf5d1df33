"""The turn pipeline, one surface for the socket and the API:

- `begin()` admits a question (input, limits, `client_id` joins, rows: `admission`), tells
  the conversation's followers (`broadcast`) and launches the runner (`runner`, `registry`);
- `follow()` gives one follower a turn's events in order, filling gaps from the database and
  recovering a turn whose process died (`follow`, `recovery`);
- `stop()` ends a running turn, wherever it runs.

The model sees the conversation through `history`."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from django.utils.translation import gettext as _

from activity.recording import feeds
from chat.models import Conversation, Message
from chat.turns import approvals, registry, runner
from chat.turns.admission import (
    QuestionInvalid,
    Restarting,
    StartedTurn,
    TurnLimited,
    TurnRejected,
    admit,
    admit_again,
    question_clean,
)
from chat.turns.broadcast import send_turn_started, subscribe
from chat.turns.follow import Inbox, Position, follow, replay, snapshot
from chat.turns.history import model_history

decide = approvals.decide

__all__ = [
    "Inbox",
    "Position",
    "QuestionInvalid",
    "Restarting",
    "StartedTurn",
    "TurnLimited",
    "TurnRejected",
    "begin",
    "decide",
    "follow",
    "question_clean",
    "regenerate",
    "replay",
    "snapshot",
    "stop",
    "subscribe",
]


async def begin(
    *,
    conversation: Conversation,
    text: object,
    client_id: uuid.UUID | None = None,
    language: str | None = None,
    guard: Callable[[], None] | None = None,
    **options: Any,
) -> StartedTurn:
    """Starts a turn (or joins the one its `client_id` names); raises TurnRejected with a
    message for people. `guard` runs first in the same trip to the database, and whatever it
    raises stops the turn. `options` go to the runner (tests give it tools and providers)."""
    if registry.draining():
        raise Restarting(_("The server is restarting; ask again in a moment."))
    approvals.watch()
    turn, history = await database_sync_to_async(_admitted)(
        admit,
        conversation=conversation,
        text=text,
        client_id=client_id,
        language=language,
        guard=guard,
    )
    if not turn.joined:
        # The question appears on every open tab before the agent starts.
        await send_turn_started(turn)
        registry.launch(turn.answer.pk, runner.run(answer=turn.answer, history=history, **options))
    return turn


def _admitted(
    admission: Callable[..., StartedTurn], **arguments: Any
) -> tuple[StartedTurn, list[dict[str, Any]] | None]:
    """A turn's rows and what the model is told, in one trip to the database thread: under
    a burst of questions each trip waits behind all the others, and the model is asked only
    after both."""
    turn = admission(**arguments)
    return turn, None if turn.joined else model_history(turn.answer)


async def regenerate(
    *, conversation: Conversation, answer_id: int, language: str | None = None, **options: Any
) -> StartedTurn:
    """A new answer in place of the conversation's last one (which stays as an earlier
    version); raises TurnRejected with a message for people."""
    if registry.draining():
        raise Restarting(_("The server is restarting; ask again in a moment."))
    turn, history = await database_sync_to_async(_admitted)(
        admit_again, conversation=conversation, answer_id=answer_id, language=language
    )
    await send_turn_started(turn)
    registry.launch(turn.answer.pk, runner.run(answer=turn.answer, history=history, **options))
    return turn


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
        return await approvals.stop_waiting(answer_id) or await stop(
            conversation_id=conversation_id, answer_id=answer_id
        )
    if not registry.cancel(answer_id):
        await feeds.request_stop(feed_id)
    return True
