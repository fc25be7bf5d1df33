"""The tool-calling loop: rounds of streamed replies (either API, chat.agent.model_api), the
tool calls each asked for run in between (chat.agent.calls, .running), a call that asks first
pausing it (chat.agent.approval). It yields activity events as they happen; whoever runs it decides
where they go."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from django.utils.translation import get_language
from django.utils.translation import gettext as _

from activity.recording.events import (
    FALLBACK,
    ModelCallDone,
    RecordedEvent,
    Status,
    TextDelta,
    ToolFeedback,
)
from chat.agent.approval import Paused, Verdict, refused, waiting
from chat.agent.approved import not_as_approved, to_run, told_of_edits
from chat.agent.calls import PendingCall, ToolCallAssembler, raw_arguments
from chat.agent.chunks import tokens
from chat.agent.context import ToolContext
from chat.agent.errors import ProviderError
from chat.agent.lines import finished, settle, writing
from chat.agent.model_api import MODEL_APIS
from chat.agent.outcome import CallOutcome
from chat.agent.policy import AgentPolicy
from chat.agent.reasoning import Thinking
from chat.agent.running import run_call, the_call
from chat.agent.tools import ToolRegistry
from project.languages import language_name

if TYPE_CHECKING:
    from openai import AsyncOpenAI

SYSTEM_PROMPT = (
    "You are Glassbox, a helpful assistant that shows its work. When the knowledge base may "
    "hold the answer, call search_documents before answering, and base your answer on what it "
    "returns; use the calculator for any arithmetic. Every tool call that has a "
    "feedback_to_user argument must fill it with a very short message (at most 100 "
    "characters) in the user's language that says what you are doing (the action, not the "
    "tool). Answer in Markdown."
)
# The demo model reads the code back from this sentence.
# Feedback lines sit among the app's own lines, which speak the feed's language: they follow
# it always; only the answer follows a user who writes in another language.
LANGUAGE_PROMPT = (
    "The user's language is {name} (language code {code}). Write every feedback_to_user in "
    "{name}: it is shown among the app's own lines in {name}. Write your answer in {name} too, "
    "unless the user writes to you in another language; then answer in theirs."
)


def system_prompt(language: str) -> str:
    return f"{SYSTEM_PROMPT} {LANGUAGE_PROMPT.format(name=language_name(language), code=language)}"


async def run_agent(
    *,
    client: AsyncOpenAI,
    messages: list[dict[str, Any]],
    registry: ToolRegistry,
    policy: AgentPolicy,
    context: ToolContext[Any],
    language: str | None = None,
    resume: Paused | None = None,
    verdict: Verdict | None = None,
) -> AsyncIterator[RecordedEvent | TextDelta | ToolFeedback | ModelCallDone | Paused]:
    """Yields Status, ToolCall, ToolResult and TextDelta events, and a ModelCallDone after
    each request to the model; the caller adds Done. A ToolCall comes before its tool runs,
    which waits until the caller asks for the next item. A call that must be approved first ends
    the run with Paused; `resume` with the `verdict` goes on from there. What the agent may
    do (the model, its rounds, time limits, which tools ask first) is `policy`'s; every tool
    runs with the turn's `context` (who asks, where, and the app's services)."""
    language = language or get_language() or policy.language
    if resume is None:
        conversation = [{"role": "system", "content": system_prompt(language)}, *messages]
        first_round, used_tools = 0, False
    else:
        conversation, first_round, used_tools = list(resume.conversation), resume.round, True
    falling_back: list[Status] = []
    for round_number in range(first_round, policy.max_tool_rounds + 1):
        if resume is not None:
            pending = [
                PendingCall(index, c["call_id"], c["name"], c["arguments"])
                for index, c in enumerate(resume.pending)
            ]
            shown: dict[str, str] = {}
            resume = None
        else:
            calls = ToolCallAssembler(registry, round_number)
            async for item in _model_round(
                client, policy, conversation, registry, round_number, calls, used_tools,
                falling_back,
            ):  # fmt: skip
                yield item
            if not calls:
                for status in settle(falling_back):
                    yield status
                if used_tools:
                    yield finished()
                return
            used_tools = True
            pending, shown = calls.completed(), calls.shown
        for position, call in enumerate(pending):
            tool = registry.get(call.name)
            decided = verdict if verdict is not None and verdict.call_id == call.call_id else None
            if decided is None and tool is not None and policy.asks_first(tool):
                yield the_call(call)
                yield Paused(
                    waiting=waiting(call, shown.get(call.call_id, "")),
                    parameters=tool.schema.get("function", {}).get("parameters"),
                    title=str(tool.title or tool.name),
                    conversation=conversation,
                    round=round_number,
                    pending=[
                        {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
                        for c in pending[position:]
                    ],
                )
                return
            outcome: CallOutcome | None = None
            # Approved, it runs only as approved (chat.agent.approved), edits included.
            approved = to_run(call, decided) if decided is not None and decided.approved else call
            if decided is not None and not decided.approved:
                outcome = refused(call, decided)
            elif approved is None:
                outcome = not_as_approved(call)
            else:
                asked, call = call, approved
                if decided is None:  # a decided call's arguments were recorded when it asked
                    # Write-ahead: whoever runs this loop records the call before asking for
                    # the next item, and only then does its tool start.
                    yield the_call(call)
                together = sum(1 for other in pending if other.name == call.name)
                async for ran in run_call(
                    registry,
                    call,
                    context,
                    policy.tool_timeout,
                    shown.get(call.call_id, ""),
                    together,
                ):
                    if isinstance(ran, CallOutcome):
                        outcome = ran
                    else:
                        yield ran
                if decided is not None and outcome is not None:
                    told = told_of_edits(
                        outcome.told, raw_arguments(asked.arguments), decided.edited_arguments
                    )
                    outcome = replace(outcome, result=replace(outcome.result, content=told))
            assert outcome is not None  # run_call ends with the call's outcome
            yield outcome.result
            for shown_line in outcome.lines:
                yield shown_line
            falling_back += [
                line
                for line in outcome.lines
                if isinstance(line, Status) and line.tool == FALLBACK
            ]
            conversation.append(
                {"role": "tool", "tool_call_id": call.call_id, "content": outcome.told}
            )
    # Only reached when the model asked for tools even though none were offered.
    for status in settle(falling_back):
        yield status
    yield finished()


async def _model_round(
    client: AsyncOpenAI,
    policy: AgentPolicy,
    conversation: list[dict[str, Any]],
    registry: ToolRegistry,
    round_number: int,
    calls: ToolCallAssembler,
    used_tools: bool,
    falling_back: list[Status],
) -> AsyncIterator[RecordedEvent | TextDelta | ToolFeedback | ModelCallDone]:
    """One request to the model, streamed: its thinking, text and tool calls as they come;
    the calls it asked for are left in `calls` and in the conversation. The 🔄 lines in
    `falling_back` are done once the answer or another call begins."""
    model = policy.model
    offer_tools = bool(registry) and round_number < policy.max_tool_rounds
    started = time.monotonic()
    thinking = Thinking(round_number)
    text: list[str] = []
    finish_reason = None
    usage = None
    answered_by = model

    def call_done(error_type: str = "") -> ModelCallDone:
        return ModelCallDone(
            round=round_number,
            model=str(answered_by),
            duration_ms=int((time.monotonic() - started) * 1000),
            thinking_ms=thinking.ms,
            reasoning=thinking.text,
            prompt_tokens=tokens(usage, "prompt_tokens"),
            completion_tokens=tokens(usage, "completion_tokens"),
            reasoning_tokens=tokens(usage, "completion_tokens_details", "reasoning_tokens"),
            cached_tokens=tokens(usage, "prompt_tokens_details", "cached_tokens"),
            error_type=error_type,
            tools_offered=registry.names() if offer_tools else (),
        )

    try:
        reply = await MODEL_APIS[policy.model_api].open(
            client, policy, conversation, registry.schemas() if offer_tools else None
        )
        async for chunk in reply.chunks:
            usage = chunk.usage or usage
            answered_by = chunk.model or answered_by
            if not chunk.has_choice:
                continue
            finish_reason = chunk.finish_reason or finish_reason
            if chunk.reasoning and (status := thinking.add(chunk.reasoning)):
                yield status
            if (chunk.content or chunk.tool_calls) and (status := thinking.finish()):
                yield status
            if chunk.content:
                if used_tools and not text:
                    for status in settle(falling_back):
                        yield status
                    yield writing()
                text.append(chunk.content)
                yield TextDelta(chunk.content)
            for tool_delta in chunk.tool_calls:
                for shown in calls.feed(tool_delta):
                    for done in settle(falling_back):
                        yield done
                    yield shown
    except Exception as exc:
        # A failed request is kept too, with its kind (its trace span's `error.type`); the
        # turn then fails as before.
        yield call_done(type(exc).__qualname__)
        raise
    if status := thinking.finish():
        yield status
    yield call_done("" if finish_reason is not None else ProviderError.__qualname__)
    if finish_reason is None:
        # A connection that just closed: what arrived is kept, but it is not an answer.
        raise ProviderError(_("the model provider's reply broke off before it was finished"))
    if calls:
        conversation.append(reply.assistant("".join(text), calls.completed()))
