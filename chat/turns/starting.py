"""A turn begun: a question admitted, or a new answer in place of the last one; its
followers told, and its runner launched as a task that outlives whoever asked."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from django.utils.translation import gettext as _

from chat.agent.context import Person
from chat.models import Conversation
from chat.turns import deps, registry, resuming, runner
from chat.turns.admission import Restarting, admit, admit_again
from chat.turns.broadcast import send_conversations_changed, send_turn_started
from chat.turns.history import model_history
from chat.turns.started import StartedTurn


async def begin(
    *,
    conversation: Conversation,
    text: object,
    client_id: uuid.UUID | None = None,
    language: str | None = None,
    guard: Callable[[], None] | None = None,
) -> StartedTurn:
    """Starts a turn (or joins the one its `client_id` names); raises TurnRejected with a
    message for people. `guard` runs first in the same trip to the database, and whatever it
    raises stops the turn."""
    if registry.draining():
        raise Restarting(_("The server is restarting; ask again in a moment."))
    resuming.watch()
    turn, history, asker = await database_sync_to_async(_admitted)(
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
        started = runner.run(answer=turn.answer, history=history, asker=asker)
        registry.launch(turn.answer.pk, started)
        await send_conversations_changed(conversation.owner_id, conversation.pk)
    return turn


async def regenerate(
    *, conversation: Conversation, answer_id: int, language: str | None = None
) -> StartedTurn:
    """A new answer in place of the conversation's last one (which stays as an earlier
    version); raises TurnRejected with a message for people."""
    if registry.draining():
        raise Restarting(_("The server is restarting; ask again in a moment."))
    turn, history, asker = await database_sync_to_async(_admitted)(
        admit_again, conversation=conversation, answer_id=answer_id, language=language
    )
    await send_turn_started(turn)
    started = runner.run(answer=turn.answer, history=history, asker=asker)
    registry.launch(turn.answer.pk, started)
    await send_conversations_changed(conversation.owner_id, conversation.pk)
    return turn


def _admitted(
    admission: Callable[..., StartedTurn], **arguments: Any
) -> tuple[StartedTurn, list[dict[str, Any]] | None, Person | None]:
    """A turn's rows, what the model is told and who asks (as its tools are told), in one
    trip to the database thread: under a burst of questions each trip waits behind all the
    others, and the model is asked only after all three."""
    turn = admission(**arguments)
    if turn.joined:
        return turn, None, None
    # The socket and the pages hand the conversation with its owner: no statement then.
    asker = deps.person(arguments["conversation"].owner)
    return turn, model_history(turn.answer), asker
