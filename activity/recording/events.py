"""The typed events of one turn, and their JSON form (the protocol in DESIGN.md).

Plain Python on purpose: the agent loop yields these, the recorder stores them, and every
consumer renders them, so they must be cheap and import nothing heavy.

Each field is declared once, here (activity.recording.declared): its JSON key and when the
key is left out, and the ActivityEvent column a recorded event keeps it in (or why none). The
JSON form, the row and the seal's list of columns are derived from that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from activity.recording.declared import declare, read_wire, wire_form

# The `tool` of the 💭 lines: a model thinking is no tool, but its line is updated in place.
REASONING = "reasoning"
# The `tool` of the 🔄 lines (answering without a tool that failed or was refused): in progress
# until the answer begins, then done on the same line.
FALLBACK = "fallback"
# A user connecting an MCP server (chat.servers.asking): its 🔑 line becomes its outcome.
CONNECT = "connect"
IN_PLACE = (REASONING, FALLBACK, CONNECT)
StatusState = Literal["in_progress", "waiting", "done", "failed"]
TurnState = Literal["complete", "failed", "interrupted", "stopped"]
STATUS_STATES: tuple[StatusState, ...] = ("in_progress", "waiting", "done", "failed")
DecisionKind = Literal["approve", "deny", "timeout"]
DECISIONS: tuple[DecisionKind, ...] = ("approve", "deny", "timeout")
TURN_STATES: tuple[TurnState, ...] = ("complete", "failed", "interrupted", "stopped")
# Where a tool result keeps its MCP session id: a key of its row's `arguments` (JSON).
MCP_SESSION_KEY = "mcp_session_id"
MCP_SESSION_COLUMN = f"arguments.{MCP_SESSION_KEY}"
# Why a field of a recorded event has no column.
LIVE_ONLY = "live only: a status with progress is never stored"


def status_state(value: str) -> StatusState:
    """A stored or received status state, checked."""
    for state in STATUS_STATES:
        if value == state:
            return state
    raise ValueError(f"not a status state: {value!r}")


def turn_state(value: str) -> TurnState:
    """A stored or received end state of a turn, checked."""
    for state in TURN_STATES:
        if value == state:
            return state
    raise ValueError(f"not the end state of a turn: {value!r}")


def decision_kind(value: str) -> DecisionKind:
    for kind in DECISIONS:
        if value == kind:
            return kind
    raise ValueError(f"not a decision: {value!r}")


@dataclass(frozen=True, slots=True)
class Link:
    """A resource a tool's result pointed to (an MCP resource link, or an embedded resource's
    address): kept for the audit, shown on the tool's line. Untrusted text, as the tool
    wrote it."""

    uri: str
    title: str = ""
    mime_type: str = ""

    def to_json(self) -> dict[str, str]:
        return {"uri": self.uri, "title": self.title, "mime_type": self.mime_type}

    @classmethod
    def from_json(cls, data: Any) -> Link | None:
        if not isinstance(data, dict) or not isinstance(data.get("uri"), str):
            return None
        return cls(
            uri=data["uri"],
            title=str(data.get("title") or ""),
            mime_type=str(data.get("mime_type") or ""),
        )


def links_from_json(data: Any) -> tuple[Link, ...]:
    """Stored or received links, each checked; what is not a link is left out."""
    if not isinstance(data, list):
        return ()
    return tuple(link for item in data if (link := Link.from_json(item)) is not None)


def _links_json(links: tuple[Link, ...]) -> list[dict[str, str]]:
    return [link.to_json() for link in links]


def _links_column(links: tuple[Link, ...]) -> list[dict[str, str]] | None:
    return _links_json(links) or None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _or_zero(value: int | None) -> int:
    return value or 0


def _or_empty(value: dict[str, Any] | None) -> dict[str, Any]:
    return value or {}


@dataclass(frozen=True, slots=True)
class Status:
    icon: str = field(metadata=declare(column="icon"))
    message: str = field(metadata=declare(column="message"))
    state: StatusState = field(
        metadata=declare(read=status_state, column="state", from_column=status_state)
    )
    tool: str = field(default="", metadata=declare(column="tool"))
    # Set when the line belongs to one tool call; a later in-progress status of the same call
    # (the model's feedback_to_user) replaces the line in place instead of adding another.
    call_id: str = field(default="", metadata=declare(omit_default=True, column="call_id"))
    seq: int | None = field(default=None, metadata=declare(omit_default=True, column="seq"))
    # A running tool's own report of how far it is. Such a status is live only: it has no
    # seq and is never stored; the call's tool_result keeps the last one.
    progress: float | None = field(
        default=None, metadata=declare(omit_default=True, read=_number, unstored=LIVE_ONLY)
    )
    total: float | None = field(
        default=None,
        metadata=declare(
            omit_default=True, shown_with="progress", read=_number, unstored=LIVE_ONLY
        ),
    )
    # The line that says how an MCP server's question ended: the question's id, its outcome
    # and the digest of the answer as kept (chain.json_digest), so the audit compares the
    # stored question with them (chat.conversations.sealed_records). Off the wire, sealed in
    # the `arguments` column no status used before (older lines have none).
    question: str = field(default="", metadata=declare(key=False, column="arguments.question"))
    outcome: str = field(default="", metadata=declare(key=False, column="arguments.outcome"))
    answer_sha256: str = field(
        default="", metadata=declare(key=False, column="arguments.answer_sha256")
    )
    type: Literal["status"] = field(default="status", metadata=declare(column="kind"))

    @property
    def live_only(self) -> bool:
        return self.progress is not None


CallOrigin = Literal["", "app"]


def call_origin(value: Any) -> CallOrigin:
    if value == "app":
        return "app"
    if value in ("", None):
        return ""
    raise ValueError(f"not a call's origin: {value!r}")


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool: str = field(metadata=declare(column="tool"))
    call_id: str = field(metadata=declare(column="call_id"))
    arguments: dict[str, Any] = field(metadata=declare(column="arguments", from_column=_or_empty))
    # Who made the call: the model (""), or the tool's own interface ("app", MCP Apps), in a
    # column no call used before.
    origin: CallOrigin = field(
        default="",
        metadata=declare(
            omit_default=True, read=call_origin, column="state", from_column=call_origin
        ),
    )
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    type: Literal["tool_call"] = field(default="tool_call", metadata=declare(column="kind"))


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str = field(metadata=declare(column="call_id"))
    ok: bool = field(metadata=declare(column="ok", from_column=bool))
    summary: str = field(metadata=declare(column="result_summary"))
    duration_ms: int = field(metadata=declare(column="duration_ms", from_column=_or_zero))
    tool: str = field(default="", metadata=declare(key=False, column="tool"))
    # The full error is kept for admins only; it never goes to the user or the model.
    error: str = field(default="", repr=False, metadata=declare(key=False, column="error"))
    # What the model was given, so later turns can show it the same result again.
    content: str = field(
        default="", repr=False, metadata=declare(key=False, column="result_content")
    )
    # The MCP server the tool came from ("" for a built-in tool).
    server: str = field(default="", metadata=declare(key=False, column="server"))
    # The session of that server the call ran in, when its transport has sessions (Streamable
    # HTTP): for the audit and the traces only, sealed in the `arguments` column no result
    # used before.
    mcp_session_id: str = field(
        default="", repr=False, metadata=declare(key=False, column=MCP_SESSION_COLUMN)
    )
    # The last progress the tool reported, and how many reports it sent (on the wire only
    # when it sent any).
    progress: float | None = field(
        default=None,
        metadata=declare(shown_with="progress_count", read=_number, column="progress"),
    )
    total: float | None = field(
        default=None,
        metadata=declare(shown_with="progress_count", read=_number, column="progress_total"),
    )
    progress_message: str = field(
        default="",
        metadata=declare(shown_with="progress_count", column="progress_message", limit=400),
    )
    progress_count: int = field(
        default=0, metadata=declare(omit_default=True, column="progress_count")
    )
    # The tool's structured result, for the audit only.
    structured: Any = field(
        default=None, repr=False, metadata=declare(key=False, column="result_structured")
    )
    # The resources its result pointed to.
    links: tuple[Link, ...] = field(
        default=(),
        metadata=declare(
            omit_default=True,
            read=links_from_json,
            write=_links_json,
            column="result_links",
            to_column=_links_column,
            from_column=links_from_json,
        ),
    )
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    type: Literal["tool_result"] = field(default="tool_result", metadata=declare(column="kind"))


@dataclass(frozen=True, slots=True)
class Decision:
    """The owner's answer to a tool call that asked first (or its timing out): who, what,
    why, and how long the call waited."""

    call_id: str = field(metadata=declare(column="call_id"))
    tool: str = field(metadata=declare(missing="", column="tool"))
    decision: DecisionKind = field(
        metadata=declare(read=decision_kind, column="state", from_column=decision_kind)
    )
    by: str = field(default="", metadata=declare(column="message", limit=400))
    reason: str = field(default="", metadata=declare(column="result_summary", limit=400))
    waited_ms: int = field(default=0, metadata=declare(column="duration_ms", from_column=_or_zero))
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    # The receipt (activity.recording.receipts): the fingerprint of the arguments decided on,
    # and the arguments the owner changed them to before approving (None: approved as asked),
    # sealed in the `arguments` column no decision used before.
    fingerprint: str = field(
        default="", metadata=declare(omit_default=True, column="arguments.fingerprint")
    )
    edited_arguments: dict[str, Any] | None = field(
        default=None, metadata=declare(omit_default=True, column="arguments.edited_arguments")
    )
    type: Literal["decision"] = field(default="decision", metadata=declare(column="kind"))
    # Its `ok` column says whether the call went ahead, for the audit's filters.
    COMPUTED_COLUMNS: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        "ok": lambda decision: decision.approved
    }

    @property
    def approved(self) -> bool:
        return self.decision == "approve"


@dataclass(frozen=True, slots=True)
class ModelCallDone:
    """One request to the model, for the audit: what it cost and what it thought. Not an event
    of the protocol; None is unknown (the provider did not say), never zero."""

    round: int
    model: str
    duration_ms: int
    thinking_ms: int | None = None
    reasoning: str = field(default="", repr=False)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    # The kind of failure of a request that failed (its exception's class name), else "".
    error_type: str = ""
    # The names of the tools the request offered the model (none in a round past the limit).
    tools_offered: tuple[str, ...] = ()
    type: Literal["model_call"] = "model_call"

    @property
    def call_id(self) -> str:
        """The id of its 💭 line."""
        return thinking_id(self.round)


def thinking_id(round_number: int) -> str:
    return f"think_{round_number}"


@dataclass(frozen=True, slots=True)
class TextDelta:
    content: str = field(metadata=declare())
    type: Literal["text"] = field(default="text", metadata=declare())


@dataclass(frozen=True, slots=True)
class Done:
    message_id: str = field(metadata=declare())
    state: TurnState = field(metadata=declare(read=turn_state))
    summary_icon: str = field(default="", metadata=declare(key="summary.icon"))
    summary_text: str = field(default="", metadata=declare(key="summary.text"))
    type: Literal["done"] = field(default="done", metadata=declare())


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A question was accepted and its answer begins: the first event of every turn."""

    question_id: str = field(metadata=declare())
    message_id: str = field(metadata=declare())
    # A regenerated answer: the id of the answer it replaces.
    replaces: str = field(default="", metadata=declare(omit_default=True))
    type: Literal["turn"] = field(default="turn", metadata=declare())


# The argument every user-facing tool asks the model for: the line shown while its call runs.
# Defined here, below both the presenters and the agent, and imported by every one that reads it.
FEEDBACK_ARG = "feedback_to_user"


@dataclass(frozen=True, slots=True)
class ToolFeedback:
    """The model's feedback_to_user for one call, the moment that string is complete (cut to
    100 characters + "..."; "" when the model left it empty), as the seed's `tool_feedback`
    event. Live only, like a tool's progress: the call's status line keeps the text."""

    call_id: str = field(metadata=declare())
    feedback: str = field(metadata=declare())
    type: Literal["tool_feedback"] = field(default="tool_feedback", metadata=declare())


@dataclass(frozen=True, slots=True)
class Error:
    """A request that was refused or could not be read; the message is for people."""

    message: str = field(metadata=declare())
    type: Literal["error"] = field(default="error", metadata=declare())


PlanState = Literal["pending", "in_progress", "done"]
PLAN_STATES: tuple[PlanState, ...] = ("pending", "in_progress", "done")
# What a plan may hold (the update_plan tool refuses more, and a stored or received plan is
# cut to it): the one line it is shown as stays readable.
PLAN_STEPS = 20
PLAN_STEP_CHARS = 200
# The line a plan is shown on, whichever call last set it: updated in place by every call.
PLAN_LINE = "plan"


def plan_state(value: str) -> PlanState:
    for state in PLAN_STATES:
        if value == state:
            return state
    raise ValueError(f"not the state of a plan's step: {value!r}")


@dataclass(frozen=True, slots=True)
class PlanStep:
    text: str
    state: PlanState

    def to_json(self) -> dict[str, str]:
        return {"text": self.text, "state": self.state}


def plan_steps(data: Any) -> tuple[PlanStep, ...]:
    """Stored or received steps, each checked and cut to the plan's bounds."""
    if not isinstance(data, list):
        raise ValueError("a plan's steps are a list")
    steps = []
    for item in data[:PLAN_STEPS]:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError("a plan's step has a text")
        steps.append(PlanStep(item["text"][:PLAN_STEP_CHARS], plan_state(str(item.get("state")))))
    return tuple(steps)


def _stored_steps(data: Any) -> tuple[PlanStep, ...]:
    """A row's steps: none once an erasure emptied them."""
    return plan_steps(data) if data else ()


def _steps_json(steps: tuple[PlanStep, ...]) -> list[dict[str, str]]:
    return [step.to_json() for step in steps]


@dataclass(frozen=True, slots=True)
class Plan:
    """The agent's plan as its last update_plan call set it (seed 001's task plans): one
    checklist line, replaced in place by the next call's. Sealed in the `arguments` column."""

    # None of them once an account's erasure emptied its feeds' arguments.
    steps: tuple[PlanStep, ...] = field(
        default=(),
        metadata=declare(
            read=plan_steps,
            write=_steps_json,
            column="arguments.steps",
            to_column=_steps_json,
            from_column=_stored_steps,
        ),
    )
    # The update_plan call that set it.
    call_id: str = field(default="", metadata=declare(omit_default=True, column="call_id"))
    seq: int | None = field(default=None, metadata=declare(omit_default=True, column="seq"))
    type: Literal["plan"] = field(default="plan", metadata=declare(column="kind"))

    @property
    def done(self) -> int:
        return sum(1 for step in self.steps if step.state == "done")

    @property
    def current(self) -> PlanStep | None:
        """The step under way, else the next one to do."""
        return next((s for s in self.steps if s.state == "in_progress"), None) or next(
            (s for s in self.steps if s.state == "pending"), None
        )


# MCP's log levels (its spec's, RFC 5424's), least severe first.
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[LogLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip
LOG_DATA_CHARS = 400
LOGGER_CHARS = 64


def log_level(value: str) -> LogLevel:
    for level in LOG_LEVELS:
        if value == level:
            return level
    raise ValueError(f"not a log level: {value!r}")


def at_least(level: str, threshold: str) -> bool:
    """Whether a message at `level` is shown to a reader who chose `threshold`."""
    return LOG_LEVELS.index(log_level(level)) >= LOG_LEVELS.index(log_level(threshold))


@dataclass(frozen=True, slots=True)
class ToolLog:
    """A log message an MCP server sent during one call (`notifications/message`): shown as
    a detail line under the call's line to readers who chose its level or a lower one.
    Untrusted text, cleaned and cut before it is made (chat.agent.mcp.logs)."""

    call_id: str = field(metadata=declare(column="call_id"))
    level: LogLevel = field(
        metadata=declare(read=log_level, column="state", from_column=log_level)
    )
    data: str = field(metadata=declare(column="message", limit=LOG_DATA_CHARS))
    # The server's words too: kept with the text (an erasure empties both), not as a tool.
    logger: str = field(default="", metadata=declare(omit_default=True, column="arguments.logger"))
    server: str = field(default="", metadata=declare(omit_default=True, column="server"))
    seq: int | None = field(default=None, metadata=declare(omit_default=True, column="seq"))
    type: Literal["tool_log"] = field(default="tool_log", metadata=declare(column="kind"))


ScoreValue = Literal["up", "down", ""]
SCORE_VALUES: tuple[ScoreValue, ...] = ("up", "down", "")
# A score's note is a person's text kept in the record: bounded.
SCORE_NOTE_LIMIT = 500
SCORE_LABEL_LIMIT = 64


def score_value(value: str) -> ScoreValue:
    """A stored or received rating: up, down or none (a label without a rating)."""
    for known in SCORE_VALUES:
        if value == known:
            return known
    raise ValueError(f"not a rating: {value!r}")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _read_at(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _at_column(value: datetime | None) -> datetime:
    return value or datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Score:
    """A person's judgement of the answer (no call_id) or of one tool call of the feed it is
    appended to: a rating, an auditor's label, a note. A later score by the same person of
    the same target replaces it (activity.selectors.current_ratings); the record keeps
    every one."""

    # "" is the answer itself.
    call_id: str = field(metadata=declare(column="call_id"))
    value: ScoreValue = field(
        metadata=declare(read=score_value, column="state", from_column=score_value)
    )
    label: str = field(
        default="", metadata=declare(column="result_summary", limit=SCORE_LABEL_LIMIT)
    )
    note: str = field(
        default="", metadata=declare(column="result_content", limit=SCORE_NOTE_LIMIT)
    )
    # Who judged, by name as shown (emptied with their account) and by id (to find what an
    # account wrote when it is erased; off the wire).
    by: str = field(default="", metadata=declare(column="message", limit=400))
    by_id: int | None = field(default=None, metadata=declare(key=False, column="arguments.by_id"))
    # The tool of the call judged ("" for the answer), for the audit's filters.
    tool: str = field(default="", metadata=declare(missing="", column="tool"))
    at: datetime | None = field(
        default=None,
        metadata=declare(read=_read_at, write=_iso, column="created_at", to_column=_at_column),
    )
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    type: Literal["score"] = field(default="score", metadata=declare(column="kind"))

    @property
    def target(self) -> str:
        return self.call_id


APP_CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")


def app_csp_from_json(data: Any) -> dict[str, tuple[str, ...]]:
    """A stored or received app's declared domains, by the spec's keys; anything else is left
    out (chat.agent.mcp.apps checked them when the resource was read)."""
    if not isinstance(data, dict):
        return {}
    return {
        key: tuple(item for item in data[key] if isinstance(item, str))
        for key in APP_CSP_KEYS
        if isinstance(data.get(key), list | tuple)
    }


def _app_csp_json(csp: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    return {key: list(domains) for key, domains in csp.items()}


@dataclass(frozen=True, slots=True)
class AppView:
    """A tool's own interface (MCP Apps) as it was read for one call: its `ui://` address,
    the domains its resource declared, and a snapshot of its HTML, sealed with the rest, so
    the feed shows the app again after a restart or with its server gone. Untrusted: the
    HTML is only ever served in a sandboxed frame (chat.apps), never on a page; off the wire
    (the frame's address and the hash are on it)."""

    call_id: str = field(metadata=declare(column="call_id"))
    uri: str = field(metadata=declare(column="arguments.uri"))
    sha256: str = field(metadata=declare(column="result_summary"))
    html: str = field(default="", repr=False, metadata=declare(key=False, column="result_content"))
    csp: dict[str, tuple[str, ...]] = field(
        default_factory=dict,
        metadata=declare(
            omit_default=True,
            read=app_csp_from_json,
            write=_app_csp_json,
            column="arguments.csp",
            to_column=_app_csp_json,
            from_column=app_csp_from_json,
        ),
    )
    tool: str = field(default="", metadata=declare(missing="", column="tool"))
    server: str = field(default="", metadata=declare(omit_default=True, column="server"))
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    type: Literal["app"] = field(default="app", metadata=declare(column="kind"))


APP_NOTE_LIMIT = 4000
AppNoteKind = Literal["message", "context"]
APP_NOTE_KINDS: tuple[AppNoteKind, ...] = ("message", "context")


def app_note_kind(value: str) -> AppNoteKind:
    for known in APP_NOTE_KINDS:
        if value == known:
            return known
    raise ValueError(f"not an app's note: {value!r}")


@dataclass(frozen=True, slots=True)
class AppNote:
    """What an app (MCP Apps) said after it was shown: a message it proposed for the
    conversation (`ui/message`; its person sends it, or not) or the context it set for the
    model (`ui/update-model-context`). The app's text: untrusted, bounded, shown as text."""

    # The call whose app it is.
    call_id: str = field(metadata=declare(column="call_id"))
    note: AppNoteKind = field(
        metadata=declare(read=app_note_kind, column="state", from_column=app_note_kind)
    )
    text: str = field(default="", metadata=declare(column="result_content", limit=APP_NOTE_LIMIT))
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    type: Literal["app_note"] = field(default="app_note", metadata=declare(column="kind"))


# One union of the recorded types; every other union is built on it, so a type added here is
# one every surface must match (the new-event-type experiment, .ci/experiments).
RecordedEvent = (
    Status | ToolCall | ToolResult | Decision | Plan | ToolLog | Score | AppView | AppNote
)
Event = RecordedEvent | TextDelta | Done
WireEvent = Event | TurnStarted | Error | ToolFeedback

# Every event by its `type`; the recorded ones are those an ActivityEvent row holds.
RECORDED_TYPES: dict[str, type[RecordedEvent]] = {
    "status": Status,
    "tool_call": ToolCall,
    "tool_result": ToolResult,
    "decision": Decision,
    "plan": Plan,
    "tool_log": ToolLog,
    "score": Score,
    "app": AppView,
    "app_note": AppNote,
}
WIRE_TYPES: dict[str, type[WireEvent]] = {
    **RECORDED_TYPES,
    "text": TextDelta,
    "done": Done,
    "turn": TurnStarted,
    "error": Error,
    "tool_feedback": ToolFeedback,
}


def with_seq(event: RecordedEvent, seq: int) -> RecordedEvent:
    return replace(event, seq=seq)


def to_json(event: WireEvent) -> dict[str, Any]:
    """The wire form of an event, the same on the socket, over SSE and in exports."""
    if WIRE_TYPES.get(getattr(event, "type", "")) is not type(event):
        raise TypeError(f"not an event: {event!r}")
    return wire_form(event)


def from_json(data: dict[str, Any]) -> WireEvent:
    """The inverse of to_json, for events that cross the channel layer."""
    kind = data.get("type")
    cls = WIRE_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    return read_wire(cls, data)
