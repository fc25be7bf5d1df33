"""A finished turn's spans, planned from its stored feed: the one path for a turn that just
ended and for any stored period, so both give the same trace. Plain data, no OpenTelemetry:
export.py hands the plans to the SDK.

Names and attributes follow the OpenTelemetry GenAI semantic conventions: the turn is an
`invoke_agent` span; each request to the model a `chat <model>` span and each tool call an
`execute_tool <tool>` span under it. Times are the recorded ones (the feed's start and end,
each model call's end less its duration, each call's and result's record). What people wrote
or the model and tools said (arguments, results, status texts, progress messages) is in the
spans only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, as the conventions
make content opt-in: without it no span, event or status says what a person, the model or a
tool wrote (a failure says its kind in `error.type`, never its text). A 💭 reasoning step is
an event of its model span, its text content too; a request that failed is a model span
with its `error.type`. Each turn names its own provider, from the
model it stored."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, assert_never

from activity.models import ActivityEvent, ActivityFeed, ModelCall
from activity.recording.events import (
    AppNote,
    AppView,
    Decision,
    Plan,
    RecordedEvent,
    Score,
    Status,
    ToolCall,
    ToolLog,
    ToolResult,
)
from activity.telemetry.ids import span_id, tool_span_id, trace_id

AGENT_NAME = "glassbox"
# The offline demo model (chat.agent.demo.MODEL): any other is an OpenAI-compatible provider's.
DEMO_MODEL = "glassbox-demo"
Attributes = dict[str, str | int | float | bool]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A turn its owner stopped ended as they chose: no error, nor are the calls it cut short.
_FAILED_TURNS = (ActivityFeed.State.FAILED, ActivityFeed.State.INTERRUPTED)


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    at_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Failure:
    """An error status: its kind (the span's `error.type` too) and a description that is
    either this module's own words or, with content capture on, what the tool said."""

    kind: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class SpanPlan:
    name: str
    span_id: int
    parent_id: int | None
    kind: Literal["internal", "client"]
    start_ns: int
    end_ns: int
    attributes: Attributes
    events: list[SpanEvent] = field(default_factory=list)
    # The span's status: None is OK.
    error: Failure | None = None


@dataclass(frozen=True, slots=True)
class TracePlan:
    trace_id: int
    spans: list[SpanPlan]

    @property
    def root(self) -> SpanPlan:
        return self.spans[0]


@dataclass(frozen=True, slots=True)
class Recorded:
    """A stored event, read once (ActivityEvent.to_event), and when it was recorded."""

    at: datetime
    event: RecordedEvent

    @classmethod
    def of(cls, row: ActivityEvent) -> Recorded:
        return cls(row.created_at, row.to_event())


@dataclass(frozen=True, slots=True)
class Options:
    """What a deployment chooses for every trace: whether content goes."""

    content: bool = False


def nanos(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def trace_plan(
    feed: ActivityFeed,
    calls: Iterable[ModelCall],
    events: Iterable[ActivityEvent],
    options: Options,
) -> TracePlan:
    """The spans of one finished turn, its `invoke_agent` span first."""
    trace = trace_id(feed.pk, feed.started_at)
    rows = [Recorded.of(row) for row in sorted(events, key=lambda row: row.seq)]
    start = nanos(feed.started_at)
    end = (
        nanos(feed.finished_at)
        if feed.finished_at
        else max([start, *(nanos(row.at) for row in rows)])
    )
    turn_id = span_id(trace, "turn")
    calls = list(calls)
    shared: Attributes = {"gen_ai.provider.name": provider_of(feed, calls)}
    if feed.conversation_id is not None:
        shared["gen_ai.conversation.id"] = str(feed.conversation_id)
    models = [_model_span(trace, turn_id, call, shared, start, options) for call in calls]
    stopped = feed.state == ActivityFeed.State.STOPPED
    tools = _tool_spans(trace, turn_id, rows, shared, options, end, stopped)
    failed = feed.state in _FAILED_TURNS
    turn = SpanPlan(
        name=f"invoke_agent {AGENT_NAME}",
        span_id=turn_id,
        parent_id=None,
        kind="internal",
        start_ns=start,
        end_ns=end,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            **shared,
            **_model_of(feed, models),
            **_usage(feed.prompt_tokens, feed.completion_tokens),
            "glassbox.feed.id": feed.pk,
            "glassbox.turn.state": feed.state,
            **({"error.type": feed.state} if failed else {}),
        },
        events=[event for row in rows if (event := _turn_event(row, options)) is not None],
        error=Failure(feed.state, f"the turn ended {feed.state}") if failed else None,
    )
    return TracePlan(trace_id=trace, spans=[turn, *models, *tools])


def provider_of(feed: ActivityFeed, calls: list[ModelCall]) -> str:
    """The turn's provider as the GenAI conventions name it, from the model it stored (not
    the exporting process's settings: a period exported later keeps each turn's own)."""
    model = feed.model or next((call.model for call in calls), "")
    return "glassbox.demo" if model == DEMO_MODEL else "openai"


def _model_of(feed: ActivityFeed, models: list[SpanPlan]) -> Attributes:
    model = feed.model or next((str(m.attributes["gen_ai.request.model"]) for m in models), "")
    return {"gen_ai.request.model": model} if model else {}


def _usage(prompt: int | None, completion: int | None) -> Attributes:
    """Tokens as the provider counted them; unknown counts are left out, never zero."""
    usage: Attributes = {}
    if prompt is not None:
        usage["gen_ai.usage.input_tokens"] = prompt
    if completion is not None:
        usage["gen_ai.usage.output_tokens"] = completion
    return usage


def _model_span(
    trace: int, parent: int, call: ModelCall, shared: Attributes, turn_start: int, options: Options
) -> SpanPlan:
    end = nanos(call.created_at)
    start = max(turn_start, end - call.duration_ms * 1_000_000)
    # A request that failed says its kind (the exception's class), never the provider's words.
    failed = {"error.type": call.error_type} if call.error_type else {}
    return SpanPlan(
        name=f"chat {call.model}".strip(),
        span_id=span_id(trace, f"model/{call.round}"),
        parent_id=parent,
        kind="client",
        start_ns=start,
        end_ns=end,
        attributes={
            "gen_ai.operation.name": "chat",
            **shared,
            "gen_ai.request.model": call.model,
            "gen_ai.response.model": call.model,
            **_usage(call.prompt_tokens, call.completion_tokens),
            **failed,
        },
        events=_reasoning(call, start, options),
        error=Failure(call.error_type) if call.error_type else None,
    )


def _reasoning(call: ModelCall, start: int, options: Options) -> list[SpanEvent]:
    """The model's 💭 step of this request: how long it thought and in how many tokens, and
    what it thought only with content capture on."""
    if not (call.reasoning or call.thinking_ms or call.reasoning_tokens):
        return []
    attributes: Attributes = {}
    if call.thinking_ms is not None:
        attributes["glassbox.reasoning.duration_ms"] = call.thinking_ms
    if call.reasoning_tokens is not None:
        attributes["glassbox.reasoning.tokens"] = call.reasoning_tokens
    if options.content and call.reasoning:
        attributes["glassbox.reasoning.content"] = call.reasoning
    return [SpanEvent("glassbox.reasoning", start, attributes)]


def _turn_event(row: Recorded, options: Options) -> SpanEvent | None:
    """What the turn's own span shows of a stored event: its status lines of no call."""
    match row.event:
        case Status(call_id=""):
            return _status_event(row.event, row.at, options)
        case Plan():
            return _plan_event(row.event, row.at, options)
        case Score(call_id=""):
            return _score_event(row.event, row.at, options)
        case (
            Status()
            | ToolCall()
            | ToolResult()
            | Decision()
            | ToolLog()
            | Score()
            | AppView()
            | AppNote()
        ):
            return None
        case _:
            assert_never(row.event)


@dataclass
class _Call:
    """One call's stored events: its call, its result, and its lines and decisions."""

    call: tuple[datetime, ToolCall] | None = None
    result: tuple[datetime, ToolResult] | None = None
    events: list[SpanEvent] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)

    def add(self, row: Recorded, options: Options) -> None:
        match row.event:
            case ToolCall():
                self.call = self.call or (row.at, row.event)
            case ToolResult():
                self.result = self.result or (row.at, row.event)
            case Status():
                self.events.append(_status_event(row.event, row.at, options))
            case Decision():
                decided: Attributes = {
                    "glassbox.approval.decision": row.event.decision,
                    "glassbox.approval.waited_ms": row.event.waited_ms,
                }
                self.events.append(SpanEvent("glassbox.approval", nanos(row.at), decided))
                self.decisions.append(row.event.decision)
            case ToolLog():
                self.events.append(_log_event(row.event, row.at, options))
            case Plan():
                pass  # the turn's own span shows the plan: it is the turn's, not the call's
            case Score():
                self.events.append(_score_event(row.event, row.at, options))
            case AppView():
                self.events.append(_app_event(row.event, row.at))
            case AppNote():
                pass  # the app's own text: not a trace's (no content by default)
            case _:
                assert_never(row.event)


def _tool_spans(
    trace: int,
    parent: int,
    rows: list[Recorded],
    shared: Attributes,
    options: Options,
    turn_end: int,
    stopped: bool,
) -> list[SpanPlan]:
    by_call: dict[str, _Call] = {}
    for row in rows:
        if row.event.call_id:
            by_call.setdefault(row.event.call_id, _Call()).add(row, options)
    return [
        _tool_span(trace, parent, own, shared, options, turn_end, stopped)
        for own in by_call.values()
        # A 💭 line, or a call announced but never made, is no tool span.
        if own.call is not None
    ]


def _tool_span(
    trace: int,
    parent: int,
    own: _Call,
    shared: Attributes,
    options: Options,
    turn_end: int,
    stopped: bool,
) -> SpanPlan:
    assert own.call is not None
    called_at, call = own.call
    result_at, result = own.result or (None, None)
    denied = next((d for d in own.decisions if d != "approve"), None)
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        **shared,
        "gen_ai.tool.name": call.tool,
        "gen_ai.tool.call.id": call.call_id,
        "gen_ai.tool.type": "extension" if result is not None and result.server else "function",
    }
    if result is not None and result.server:
        # A tool of an MCP server: the request that ran it, the server as configured, and
        # the session it ran in (servers over stdio or stateless HTTP have none).
        attributes["mcp.method.name"] = "tools/call"
        attributes["glassbox.mcp.server"] = result.server
        if session := result.mcp_session_id:
            attributes["mcp.session.id"] = session
    if options.content:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(call.arguments, ensure_ascii=False)
        if result is not None:
            attributes["gen_ai.tool.call.result"] = result.content
    events = list(own.events)
    error = None
    if result is None or result_at is None:
        error = None if stopped else Failure("no_result", "the call has no result")
    else:
        if result.progress_count:
            events.append(_progress_event(result, result_at, options))
        if not result.ok:
            # What the tool or the denying user wrote is content: its kind goes, not its text.
            said = result.summary if options.content else ""
            error = Failure(f"approval_{denied}" if denied else "tool_error", said)
    if error is not None:
        attributes["error.type"] = error.kind
    start = nanos(called_at)
    return SpanPlan(
        name=f"execute_tool {call.tool}",
        span_id=tool_span_id(trace, call.call_id),
        parent_id=parent,
        kind="internal",
        start_ns=start,
        end_ns=max(start, nanos(result_at) if result_at is not None else turn_end),
        attributes=attributes,
        events=events,
        error=error,
    )


def _status_event(status: Status, at: datetime, options: Options) -> SpanEvent:
    attributes: Attributes = {
        "glassbox.status.state": status.state,
        "glassbox.status.icon": status.icon,
    }
    if options.content:
        attributes["glassbox.status.message"] = status.message
    return SpanEvent("glassbox.status", nanos(at), attributes)


def _plan_event(plan: Plan, at: datetime, options: Options) -> SpanEvent:
    attributes: Attributes = {
        "glassbox.plan.steps": len(plan.steps),
        "glassbox.plan.done": plan.done,
    }
    if options.content:
        steps = [step.to_json() for step in plan.steps]
        attributes["glassbox.plan.content"] = json.dumps(steps, ensure_ascii=False)
    return SpanEvent("glassbox.plan", nanos(at), attributes)


def _log_event(log: ToolLog, at: datetime, options: Options) -> SpanEvent:
    """An MCP server's log message: its level always, what it wrote (and its logger's name,
    also the server's words) only with content capture on."""
    attributes: Attributes = {"glassbox.mcp.log.level": log.level}
    if options.content:
        attributes["glassbox.mcp.log.data"] = log.data
        if log.logger:
            attributes["glassbox.mcp.log.logger"] = log.logger
    return SpanEvent("glassbox.mcp.log", nanos(at), attributes)


def _app_event(app: AppView, at: datetime) -> SpanEvent:
    """The call's own interface (MCP Apps): its address and the hash of the HTML it showed;
    never the HTML (the record keeps it)."""
    attributes: Attributes = {"mcp.app.resource_uri": app.uri, "mcp.app.sha256": app.sha256}
    return SpanEvent("glassbox.mcp.app", nanos(at), attributes)


def _score_event(score: Score, at: datetime, options: Options) -> SpanEvent:
    """A person's judgement of the turn or the call whose span this is; the note is their
    text, sent only with content capture on."""
    attributes: Attributes = {"glassbox.score.target": score.call_id or "answer"}
    if score.value:
        attributes["glassbox.score.value"] = score.value
    if score.label:
        attributes["glassbox.score.label"] = score.label
    if options.content and score.note:
        attributes["glassbox.score.note"] = score.note
    return SpanEvent("glassbox.score", nanos(at), attributes)


def _progress_event(result: ToolResult, at: datetime, options: Options) -> SpanEvent:
    attributes: Attributes = {"glassbox.progress.count": result.progress_count}
    if result.progress is not None:
        attributes["glassbox.progress.progress"] = result.progress
    if result.total is not None:
        attributes["glassbox.progress.total"] = result.total
    if options.content:
        attributes["glassbox.progress.message"] = result.progress_message
    return SpanEvent("glassbox.progress", nanos(at), attributes)
