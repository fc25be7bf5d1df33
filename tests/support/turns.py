"""A whole turn run in the test's process, without a socket: admitted, then run to its end."""

from __future__ import annotations

from asgiref.sync import async_to_sync

from chat.models import Conversation, Message
from chat.turns import runner
from chat.turns.admission import admit


def run_turn(conversation: Conversation, question: str, **options) -> Message:
    """The answer, finished; `options` go to the runner (tools, a scripted provider)."""
    turn = admit(conversation=conversation, text=question)
    async_to_sync(runner.run)(answer=turn.answer, **options)
    return Message.objects.select_related("feed").get(pk=turn.answer.pk)
