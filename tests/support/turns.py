"""A whole turn run in the test's process, without a socket: admitted, then run to its end."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import async_to_sync

from chat.agent.client import close_clients
from chat.agent.demo_wire import Gate
from chat.agent.tools import ToolRegistry
from chat.models import Conversation, Message
from chat.turns import deps, runner
from chat.turns.admission import admit


def run_turn(
    conversation: Conversation, question: str, dependencies: deps.Dependencies | None = None
) -> Message:
    """The answer, finished; run with `dependencies` (a scripted provider, tools of the
    test's own) instead of the configured ones when given."""
    turn = admit(conversation=conversation, text=question)

    async def run() -> None:
        try:
            await runner.run(answer=turn.answer)
        finally:
            await close_clients()  # this event loop ends with the call

    with deps.using(dependencies or deps.current()):
        async_to_sync(run)()
    return Message.objects.select_related("feed").get(pk=turn.answer.pk)


def stopped_turn(conversation: Conversation, question: str, held: Gate) -> Message:
    """The answer of a turn launched in this process as a question launches it, stopped by
    its owner (chat.turns.stop) once `held` holds the model mid-stream, and ended."""
    from chat.turns import stop
    from chat.turns.registry import finish_all, launch

    turn = admit(conversation=conversation, text=question)

    async def run() -> None:
        try:
            launch(turn.answer.pk, runner.run(answer=turn.answer))
            await held.reached.wait()
            assert await stop(conversation_id=conversation.pk, answer_id=turn.answer.pk)
            await finish_all()
        finally:
            await close_clients()  # this event loop ends with the call

    async_to_sync(run)()
    return Message.objects.select_related("feed").get(pk=turn.answer.pk)


def fixed_tools(tools: ToolRegistry) -> Callable[..., Awaitable[ToolRegistry]]:
    """For Dependencies.tools: these tools, whatever the settings configure."""

    async def fixed(asker: object = None) -> ToolRegistry:
        return tools

    return fixed


def decided_turn(
    conversation: Conversation,
    question: str,
    *,
    user,
    approve: bool,
    reason: str = "",
    edits: dict | None = None,
) -> Message:
    """A turn whose tool asks first, run until it pauses, then decided by `user` (with a
    reason, and approved with `edits` to its arguments if given) and run to its end (in one
    event loop: the decision launches the rest as a task)."""
    from chat.asks.receipts import Edits
    from chat.models import ToolApproval
    from chat.turns import resuming
    from chat.turns.registry import finish_all

    answer = run_turn(conversation, question)
    asked = ToolApproval.objects.get(answer=answer)

    async def decide() -> None:
        try:
            await resuming.decide(
                conversation_id=conversation.pk,
                call_id=asked.call_id,
                user=user,
                approve=approve,
                reason=reason,
                edits=None if edits is None else Edits(asked.arguments | edits),
            )
            await finish_all()
        finally:
            await close_clients()  # this event loop ends with the call

    async_to_sync(decide)()
    return Message.objects.select_related("feed").get(pk=answer.pk)
