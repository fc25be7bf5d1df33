"""The turn's side of an MCP server's approved request to use the model (chat.agent.sampling):
one call through the deployment's provider, against its user's daily token budget, recorded
as a model call of the turn (its usage in the feed's totals, sealed when the feed closes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils.translation import gettext as _

from activity.recording.events import ModelCallDone, RecordedEvent, Status
from activity.writing.recorder import FeedRecorder
from chat.agent.sampling import FIRST_ROUND, Failed, Refused, Sampled, SamplingRequest, sample
from chat.turns.admission import tokens_today
from chat.turns.policy import agent_policy

if TYPE_CHECKING:
    from openai import AsyncOpenAI

ICON = "🧠"


def spent(call: ModelCallDone) -> int:
    return (call.prompt_tokens or 0) + (call.completion_tokens or 0)


def sampling_model(
    recorder: FeedRecorder,
    client_factory: Callable[[], AsyncOpenAI],
    emit: Callable[[RecordedEvent], Awaitable[None]],
) -> Callable[[SamplingRequest], Awaitable[Sampled]]:
    async def run(request: SamplingRequest) -> Sampled:
        limit = settings.GLASSBOX_DAILY_TOKENS
        if limit:
            # This turn's calls count too: its feed adds them to the day's only at its end.
            before = await database_sync_to_async(tokens_today)(recorder.feed.owner_id)
            if before + sum(spent(call) for call in recorder.calls) >= limit:
                await emit(
                    Status(
                        icon="⛔",
                        message=_("The model was not asked: your tokens for today are used up"),
                        state="in_progress",
                        call_id=request.call_id,
                    )
                )
                raise Refused("The user's token budget for today is used up")
        number = FIRST_ROUND + sum(1 for call in recorder.calls if call.round >= FIRST_ROUND)
        try:
            sampled, call = await sample(client_factory(), agent_policy(), request, number)
        except Failed as failed:
            recorder.add_call(failed.call)
            await emit(
                Status(
                    icon="❌",
                    message=_("The model could not answer the request of %(server)s")
                    % {"server": request.server},
                    state="in_progress",
                    call_id=request.call_id,
                )
            )
            raise
        recorder.add_call(call)
        await emit(
            Status(
                icon=ICON,
                message=_("The model wrote %(count)d characters for %(server)s")
                % {"count": len(sampled.text), "server": request.server},
                state="in_progress",
                call_id=request.call_id,
            )
        )
        return sampled

    return run
