"""The tool-calling loop. It streams chat completions and yields activity events as the
stream arrives; whoever runs it decides where the events go."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import jiter
from django.conf import settings
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from openai import AsyncOpenAI

from activity.events import (
    FALLBACK,
    REASONING,
    ModelCallDone,
    RecordedEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
    thinking_id,
)
from activity.presentation import seconds
from chat.agent.errors import ProviderError
from chat.agent.replies import readable
from chat.agent.tools import (
    FEEDBACK_ARG,
    AgentTool,
    ToolError,
    ToolOutcome,
    ToolRegistry,
    report_progress_to,
    truncate_feedback,
)
from project.languages import language_name

logger = logging.getLogger("glassbox.agent")

SYSTEM_PROMPT = (
    "You are Glassbox, a helpful assistant that shows its work. When the knowledge base may "
    "hold the answer, call search_documents before answering, and base your answer on what it "
    "returns; use the calculator for any arithmetic. Every tool call that has a "
    "feedback_to_user argument must fill it with a very short message (at most 100 "
    "characters) in the user's language that says what you are doing (the action, not the "
    "tool). Answer in Markdown."
)
# The demo model reads the code back from this sentence.
LANGUAGE_PROMPT = (
    "The user's language is {name} (language code {code}): write every feedback_to_user and "
    "your answer in {name}, unless the user writes to you in another language; then use theirs."
)


def system_prompt(language: str) -> str:
    return f"{SYSTEM_PROMPT} {LANGUAGE_PROMPT.format(name=language_name(language), code=language)}"


# Built when a turn needs them, so they speak the turn's language.
def writing() -> Status:
    return Status(icon="✍️", message=_("Writing the answer…"), state="in_progress")


def finished() -> Status:
    return Status(icon="✅", message=_("Done"), state="done")


def fallback(call_id: str, message: str) -> Status:
    """Seed 002: 🔄 runs until the answer (or the model's next step) begins."""
    return Status(
        icon="🔄",
        message=message,
        state="in_progress",
        tool=FALLBACK,
        call_id=f"{call_id}-fallback",
    )


def settle(running: list[Status]) -> list[Status]:
    """The 🔄 lines still running, done: what they announced has begun."""
    done = [replace(line, state="done") for line in running]
    running.clear()
    return done


# Where OpenAI-compatible servers put a reasoning model's thinking in a streamed delta:
# DeepSeek and vLLM `reasoning_content`, Ollama and OpenRouter `reasoning` (OpenRouter also
# `reasoning_details`, the same text again, read only when the others are absent).
REASONING_FIELDS = ("reasoning_content", "reasoning")


def reasoning_of(delta: Any) -> str:
    for name in REASONING_FIELDS:
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    details = getattr(delta, "reasoning_details", None)
    if isinstance(details, list):
        return "".join(
            d["text"] for d in details if isinstance(d, dict) and isinstance(d.get("text"), str)
        )
    return ""


class Thinking:
    """One model round's reasoning: a 💭 line from its first delta until the model answers or
    calls a tool, then the time it took on that same line."""

    def __init__(self, round_number: int) -> None:
        self.call_id = thinking_id(round_number)
        self.parts: list[str] = []
        self.started: float | None = None
        self.ms: int | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, text: str) -> Status | None:
        self.parts.append(text)
        if self.started is not None:
            return None
        self.started = time.monotonic()
        return Status(
            icon="💭", message=_("Thinking…"), state="in_progress", tool=REASONING,
            call_id=self.call_id,
        )  # fmt: skip

    def finish(self) -> Status | None:
        if self.started is None or self.ms is not None:
            return None
        self.ms = int((time.monotonic() - self.started) * 1000)
        return Status(
            icon="💭",
            message=_("Thought for %(duration)s") % {"duration": seconds(self.ms)},
            state="done",
            tool=REASONING,
            call_id=self.call_id,
        )


def _tokens(usage: Any, *path: str) -> int | None:
    value = usage
    for name in path:
        value = getattr(value, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class PendingCall:
    index: int
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    announced: bool = False
    feedback_shown: bool = False


class ToolCallAssembler:
    """Joins streamed tool-call deltas by index (parallel calls, arguments in many chunks)
    and says what to show as soon as it can: the tool's name, then its feedback_to_user."""

    def __init__(self, registry: ToolRegistry, round_number: int) -> None:
        self.registry = registry
        self.round_number = round_number
        self.calls: dict[int, PendingCall] = {}
        # The text each call's line shows, which a progress report without a message keeps.
        self.shown: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.calls)

    def feed(self, delta: Any) -> list[Status]:
        call = self.calls.setdefault(delta.index, PendingCall(index=delta.index))
        if delta.id and not call.call_id:
            call.call_id = delta.id
        function = delta.function
        if function is not None:
            if function.name and not call.name:
                call.name = function.name
            if function.arguments:
                call.arguments += function.arguments
        if not call.name:
            return []
        if not call.call_id:
            call.call_id = f"call_{self.round_number}_{call.index}"
        statuses = []
        tool = self.registry.get(call.name)
        if not call.announced:
            call.announced = True
            statuses.append(self._status(call, tool, working_message(tool, call.name)))
        if not call.feedback_shown and FEEDBACK_ARG in call.arguments:
            feedback = complete_feedback(call.arguments)
            if feedback:
                call.feedback_shown = True
                statuses.append(self._status(call, tool, truncate_feedback(feedback)))
        return statuses

    def _status(self, call: PendingCall, tool: AgentTool | None, message: str) -> Status:
        self.shown[call.call_id] = message
        return Status(
            icon=tool.icon if tool else "🛠️",
            message=message,
            state="in_progress",
            tool=call.name,
            call_id=call.call_id,
        )

    def completed(self) -> list[PendingCall]:
        return [self.calls[index] for index in sorted(self.calls)]


def working_message(tool: AgentTool | None, name: str) -> str:
    return str(tool.working_message) if tool else _("Running %(tool)s…") % {"tool": name}


def complete_feedback(arguments: str) -> str:
    """feedback_to_user once its string is complete in still-streaming JSON, else ''."""
    try:
        parsed = jiter.from_json(arguments.encode(), partial_mode="on")
    except ValueError:
        return ""
    value = parsed.get(FEEDBACK_ARG) if isinstance(parsed, dict) else None
    return value.strip() if isinstance(value, str) else ""


def parse_arguments(tool: AgentTool, raw: str) -> tuple[dict[str, Any], Any]:
    """The arguments as sent (for the audit) and as the tool's model validated them."""
    try:
        arguments = json.loads(raw or "{}")
    except ValueError:
        raise ToolError(_("malformed arguments")) from None
    if not isinstance(arguments, dict):
        raise ToolError(_("arguments are not an object"))
    return arguments, tool.parse(arguments)


# A page shows at most this many progress updates a second of one call; the rest coalesce.
PROGRESS_PER_SECOND = 5
PROGRESS_MESSAGE_LIMIT = 200


@dataclass
class Progress:
    """What a running call last reported, and how often it reported."""

    value: float | None = None
    total: float | None = None
    message: str = ""
    count: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def report(self, value: float, total: float | None, message: str | None) -> None:
        if not isinstance(value, int | float) or value != value:  # NaN is no progress
            return
        self.value = float(value)
        self.total = float(total) if isinstance(total, int | float) and total > 0 else None
        if message:
            self.message = " ".join(str(message).split())[:PROGRESS_MESSAGE_LIMIT]
        self.count += 1
        self.changed.set()


async def run_call(
    registry: ToolRegistry, call: PendingCall, time_limit: float, shown: str, together: int = 1
) -> AsyncIterator[Status | tuple[ToolCall, ToolResult, list[Status], str]]:
    """Runs one call as a task of its own and yields its progress as live statuses (at most
    PROGRESS_PER_SECOND a second, the latest always shown), then its outcome."""
    progress = Progress()
    task = asyncio.create_task(
        run_tool(registry, call, time_limit, progress, together),
        context=report_progress_to(progress.report),
    )
    tool = registry.get(call.name)
    interval = 1 / PROGRESS_PER_SECOND
    loop = asyncio.get_running_loop()
    last_shown = -interval
    try:
        while True:
            changed = asyncio.ensure_future(progress.changed.wait())
            await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()
            wait = last_shown + interval - loop.time()
            if not task.done() and wait > 0:
                await asyncio.wait({task}, timeout=wait)
            if task.done():
                break
            progress.changed.clear()
            last_shown = loop.time()
            yield Status(
                icon=tool.icon if tool else "🛠️",
                message=progress.message or shown,
                state="in_progress",
                tool=call.name,
                call_id=call.call_id,
                progress=progress.value,
                total=progress.total,
            )
        yield task.result()
    finally:
        if not task.done():
            # Stop or the turn's end: cancelling the call tells an MCP server to stop too.
            task.cancel()
            await asyncio.wait({task}, timeout=2)


def done_message(outcome: ToolOutcome, together: int) -> str:
    """Seed 001: calls of one tool made together each say what they were about."""
    if together > 1 and outcome.subject:
        return _("%(done)s for “%(subject)s”") % {
            "done": outcome.done_message,
            "subject": outcome.subject,
        }
    return str(outcome.done_message)


async def run_tool(
    registry: ToolRegistry,
    call: PendingCall,
    time_limit: float,
    progress: Progress | None = None,
    together: int = 1,
) -> tuple[ToolCall, ToolResult, list[Status], str]:
    """Runs one call. Never raises: a failure becomes events and a short error for the model."""
    progress = progress or Progress()
    tool = registry.get(call.name)
    started = time.monotonic()
    arguments: dict[str, Any] = {}
    outcome = None
    error = reason = ""
    try:
        if tool is None:
            raise ToolError(_("unknown tool"))
        arguments, parsed = parse_arguments(tool, call.arguments)
        outcome = await asyncio.wait_for(tool.run(parsed), time_limit)
    except ToolError as exc:
        reason = error = str(exc)
    except TimeoutError:
        reason = _("timed out after %(seconds)s s") % {"seconds": f"{time_limit:g}"}
        error = f"TimeoutError: {reason}"
    except Exception:
        logger.exception("tool %s failed", call.name)
        reason = _("unexpected error")
        error = traceback.format_exc()
    duration_ms = int((time.monotonic() - started) * 1000)
    recorded_arguments = arguments or _raw_arguments(call.arguments)
    tool_call = ToolCall(tool=call.name, call_id=call.call_id, arguments=recorded_arguments)
    reported = partial(
        ToolResult,
        call_id=call.call_id,
        duration_ms=duration_ms,
        tool=call.name,
        server=getattr(tool, "server", ""),
        progress=progress.value,
        total=progress.total,
        progress_message=progress.message,
        progress_count=progress.count,
    )
    if outcome is not None:
        assert tool is not None  # an outcome comes from a tool
        content = (
            outcome.content
            if isinstance(outcome.content, str)
            else json.dumps(outcome.content, ensure_ascii=False, default=str)
        )
        result = reported(
            ok=True,
            summary=outcome.summary,
            content=content,
            structured=outcome.structured,
            links=outcome.links,
        )
        done = Status(
            icon=tool.labels.icon,
            message=done_message(outcome, together),
            state="done",
            tool=call.name,
            call_id=call.call_id,
        )
        return tool_call, result, [done], content
    content = json.dumps({"error": reason})
    result = reported(ok=False, summary=reason, error=error, content=content)
    what = str(tool.labels.failed) if tool else _("Unknown tool %(tool)s") % {"tool": call.name}
    failed = Status(
        icon="❌",
        message=_("%(what)s (%(reason)s)") % {"what": what, "reason": reason},
        state="failed",
        tool=call.name,
        call_id=call.call_id,
    )
    general = fallback(call.call_id, _("Answering from general knowledge"))
    return tool_call, result, [failed, general], content


def _raw_arguments(raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw[:2000]}
    return parsed if isinstance(parsed, dict) else {"_raw": raw[:2000]}


@dataclass
class Paused:
    """The loop stopped at a call that must be approved first: everything it needs to go on
    later, in any process, as JSON (the conversation as the model had it, the calls of the
    round still to run, the waiting one first)."""

    conversation: list[dict[str, Any]]
    round: int
    pending: list[dict[str, str]]
    # The call's ⏸ line: recorded with the pause, in one transaction, then shown.
    waiting: Status | None = None
    type: str = "paused"

    @property
    def call(self) -> dict[str, str]:
        return self.pending[0]

    def as_state(self) -> dict[str, Any]:
        return {"conversation": self.conversation, "round": self.round, "pending": self.pending}

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> Paused:
        return cls(conversation=data["conversation"], round=data["round"], pending=data["pending"])


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on the waiting call, as the loop goes on from it."""

    call_id: str
    approved: bool
    # What the model is told when the call did not run.
    reason: str = ""


def asks_first(tool: AgentTool) -> bool:
    """The tool's own flag, unless GLASSBOX_APPROVAL overrides it by name."""
    return bool(settings.GLASSBOX_APPROVAL.get(tool.name, tool.needs_approval))


def waiting(call: PendingCall, shown: str) -> Status:
    what = shown or _("Running %(tool)s…") % {"tool": call.name}
    return Status(
        icon="⏸",
        message=_("%(what)s — waiting for your approval") % {"what": what.rstrip("…")},
        state="waiting",
        tool=call.name,
        call_id=call.call_id,
    )


def refused(call: PendingCall, verdict: Verdict) -> tuple[ToolResult, list[Status], str]:
    """A call that was denied or timed out: the model learns why, and answers without it."""
    content = json.dumps({"error": verdict.reason}, ensure_ascii=False)
    result = ToolResult(
        call_id=call.call_id, ok=False, summary=verdict.reason, duration_ms=0, tool=call.name,
        content=content,
    )  # fmt: skip
    return result, [fallback(call.call_id, _("Answering without it"))], content


async def run_agent(
    *,
    client: AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    registry: ToolRegistry,
    max_tool_rounds: int,
    tool_timeout: float,
    language: str | None = None,
    resume: Paused | None = None,
    verdict: Verdict | None = None,
) -> AsyncIterator[RecordedEvent | TextDelta | ModelCallDone | Paused]:
    """Yields Status, ToolCall, ToolResult and TextDelta events, and a ModelCallDone after
    each request to the model; the caller adds Done. A call that must be approved first ends
    the run with Paused; `resume` with the `verdict` goes on from there."""
    language = language or get_language() or settings.LANGUAGE_CODE
    if resume is None:
        conversation = [{"role": "system", "content": system_prompt(language)}, *messages]
        first_round, used_tools = 0, False
    else:
        conversation, first_round, used_tools = list(resume.conversation), resume.round, True
    falling_back: list[Status] = []
    for round_number in range(first_round, max_tool_rounds + 1):
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
                client, model, conversation, registry, round_number, max_tool_rounds, calls,
                used_tools, falling_back,
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
            if decided is None and tool is not None and asks_first(tool):
                arguments = _raw_arguments(call.arguments)
                yield ToolCall(tool=call.name, call_id=call.call_id, arguments=arguments)
                yield Paused(
                    waiting=waiting(call, shown.get(call.call_id, "")),
                    conversation=conversation,
                    round=round_number,
                    pending=[
                        {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
                        for c in pending[position:]
                    ],
                )
                return
            if decided is not None and not decided.approved:
                result, statuses, content = refused(call, decided)
                yield result
            else:
                together = sum(1 for other in pending if other.name == call.name)
                async for ran in run_call(
                    registry, call, tool_timeout, shown.get(call.call_id, ""), together
                ):
                    if isinstance(ran, Status):
                        yield ran
                    else:
                        tool_call, result, statuses, content = ran
                if decided is None:  # a decided call's arguments were recorded when it asked
                    yield tool_call
                yield result
            for status in statuses:
                yield status
            falling_back += [status for status in statuses if status.tool == FALLBACK]
            conversation.append({"role": "tool", "tool_call_id": call.call_id, "content": content})
    # Only reached when the model asked for tools even though none were offered.
    for status in settle(falling_back):
        yield status
    yield finished()


async def _model_round(
    client: AsyncOpenAI,
    model: str,
    conversation: list[dict[str, Any]],
    registry: ToolRegistry,
    round_number: int,
    max_tool_rounds: int,
    calls: ToolCallAssembler,
    used_tools: bool,
    falling_back: list[Status],
) -> AsyncIterator[RecordedEvent | TextDelta | ModelCallDone]:
    """One request to the model, streamed: its thinking, text and tool calls as they come;
    the calls it asked for are left in `calls` and in the conversation. The 🔄 lines in
    `falling_back` are done once the answer or another call begins."""
    offer_tools = bool(registry) and round_number < max_tool_rounds
    options: dict[str, Any] = {"tools": registry.schemas()} if offer_tools else {}
    if settings.GLASSBOX_STREAM_USAGE:
        options["stream_options"] = {"include_usage": True}
    started = time.monotonic()
    stream = await client.chat.completions.create(
        model=model,
        messages=conversation,  # type: ignore[arg-type]  # plain dicts, as the API takes
        stream=True,
        **options,
    )
    thinking = Thinking(round_number)
    text: list[str] = []
    finish_reason = None
    usage = None
    answered_by = model
    async for chunk in readable(stream):
        usage = getattr(chunk, "usage", None) or usage
        answered_by = getattr(chunk, "model", None) or answered_by
        if not chunk.choices:
            continue
        finish_reason = chunk.choices[0].finish_reason or finish_reason
        delta = chunk.choices[0].delta
        reasoning = reasoning_of(delta)
        if reasoning and (status := thinking.add(reasoning)):
            yield status
        if (delta.content or delta.tool_calls) and (status := thinking.finish()):
            yield status
        if delta.content:
            if used_tools and not text:
                for status in settle(falling_back):
                    yield status
                yield writing()
            text.append(delta.content)
            yield TextDelta(delta.content)
        for tool_delta in delta.tool_calls or []:
            for status in calls.feed(tool_delta):
                for done in settle(falling_back):
                    yield done
                yield status
    if status := thinking.finish():
        yield status
    yield ModelCallDone(
        round=round_number,
        model=str(answered_by),
        duration_ms=int((time.monotonic() - started) * 1000),
        thinking_ms=thinking.ms,
        reasoning=thinking.text,
        prompt_tokens=_tokens(usage, "prompt_tokens"),
        completion_tokens=_tokens(usage, "completion_tokens"),
        reasoning_tokens=_tokens(usage, "completion_tokens_details", "reasoning_tokens"),
        cached_tokens=_tokens(usage, "prompt_tokens_details", "cached_tokens"),
    )
    if finish_reason is None:
        # A connection that just closed: what arrived is kept, but it is not an answer.
        raise ProviderError(_("the model provider's reply broke off before it was finished"))
    if calls:
        conversation.append(
            {
                "role": "assistant",
                "content": "".join(text) or None,
                "tool_calls": [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": call.arguments if _is_json(call.arguments) else "{}",
                        },
                    }
                    for call in calls.completed()
                ],
            }
        )


def _is_json(raw: str) -> bool:
    try:
        json.loads(raw or "{}")
    except ValueError:
        return False
    return True
