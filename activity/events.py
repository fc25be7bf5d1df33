"""The typed events of one turn, and their JSON form (the protocol in DESIGN.md).

Plain Python on purpose: the agent loop yields these, the recorder stores them, and every
consumer renders them, so they must be cheap and import nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

# The `tool` of the 💭 lines: a model thinking is no tool, but its line is updated in place.
REASONING = "reasoning"
# The `tool` of the 🔄 lines (answering without a tool that failed or was refused): in progress
# until the answer begins, then done on the same line.
FALLBACK = "fallback"
IN_PLACE = (REASONING, FALLBACK)
StatusState = Literal["in_progress", "waiting", "done", "failed"]
TurnState = Literal["complete", "failed", "interrupted"]
STATUS_STATES: tuple[StatusState, ...] = ("in_progress", "waiting", "done", "failed")
DecisionKind = Literal["approve", "deny", "timeout"]
DECISIONS: tuple[DecisionKind, ...] = ("approve", "deny", "timeout")
TURN_STATES: tuple[TurnState, ...] = ("complete", "failed", "interrupted")


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


@dataclass(frozen=True, slots=True)
class Status:
    icon: str
    message: str
    state: StatusState
    tool: str = ""
    # Set when the line belongs to one tool call; a later in-progress status of the same call
    # (the model's feedback_to_user) replaces the line in place instead of adding another.
    call_id: str = ""
    seq: int | None = None
    # A running tool's own report of how far it is. Such a status is live only: it has no
    # seq and is never stored; the call's tool_result keeps the last one.
    progress: float | None = None
    total: float | None = None
    type: Literal["status"] = "status"

    @property
    def live_only(self) -> bool:
        return self.progress is not None


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


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool: str
    call_id: str
    arguments: dict[str, Any]
    seq: int | None = None
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    ok: bool
    summary: str
    duration_ms: int
    tool: str = ""
    # The full error is kept for admins only; it never goes to the user or the model.
    error: str = field(default="", repr=False)
    # What the model was given, so later turns can show it the same result again.
    content: str = field(default="", repr=False)
    # The MCP server the tool came from ("" for a built-in tool).
    server: str = ""
    # The last progress the tool reported, and how many reports it sent.
    progress: float | None = None
    total: float | None = None
    progress_message: str = ""
    progress_count: int = 0
    # The tool's structured result, for the audit only.
    structured: Any = field(default=None, repr=False)
    # The resources its result pointed to.
    links: tuple[Link, ...] = ()
    seq: int | None = None
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class Decision:
    """The owner's answer to a tool call that asked first (or its timing out): who, what,
    why, and how long the call waited."""

    call_id: str
    tool: str
    decision: DecisionKind
    by: str = ""
    reason: str = ""
    waited_ms: int = 0
    seq: int | None = None
    # The receipt (activity.receipts): the fingerprint of the arguments decided on, and the
    # arguments the owner changed them to before approving (None: approved as asked).
    fingerprint: str = ""
    edited_arguments: dict[str, Any] | None = None
    type: Literal["decision"] = "decision"

    @property
    def approved(self) -> bool:
        return self.decision == "approve"


def decision_kind(value: str) -> DecisionKind:
    for kind in DECISIONS:
        if value == kind:
            return kind
    raise ValueError(f"not a decision: {value!r}")


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
    type: Literal["model_call"] = "model_call"

    @property
    def call_id(self) -> str:
        """The id of its 💭 line."""
        return thinking_id(self.round)


def thinking_id(round_number: int) -> str:
    return f"think_{round_number}"


@dataclass(frozen=True, slots=True)
class TextDelta:
    content: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class Done:
    message_id: str
    state: TurnState
    summary_icon: str = ""
    summary_text: str = ""
    type: Literal["done"] = "done"


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A question was accepted and its answer begins: the first event of every turn."""

    question_id: str
    message_id: str
    # A regenerated answer: the id of the answer it replaces.
    replaces: str = ""
    type: Literal["turn"] = "turn"


@dataclass(frozen=True, slots=True)
class ToolFeedback:
    """The model's feedback_to_user for one call, the moment that string is complete (cut to
    100 characters + "..."; "" when the model left it empty), as the seed's `tool_feedback`
    event. Live only, like a tool's progress: the call's status line keeps the text."""

    call_id: str
    feedback: str
    type: Literal["tool_feedback"] = "tool_feedback"


@dataclass(frozen=True, slots=True)
class Error:
    """A request that was refused or could not be read; the message is for people."""

    message: str
    type: Literal["error"] = "error"


Event = Status | ToolCall | ToolResult | Decision | TextDelta | Done
RecordedEvent = Status | ToolCall | ToolResult | Decision
WireEvent = Event | TurnStarted | Error | ToolFeedback


def with_seq(event: RecordedEvent, seq: int) -> RecordedEvent:
    return replace(event, seq=seq)


def to_json(event: WireEvent) -> dict[str, Any]:
    """The wire form of an event, the same on the socket, over SSE and in exports."""
    match event:
        case TurnStarted():
            started = {
                "type": "turn",
                "question_id": event.question_id,
                "message_id": event.message_id,
            }
            return started | ({"replaces": event.replaces} if event.replaces else {})
        case Error():
            return {"type": "error", "message": event.message}
        case Status():
            data: dict[str, Any] = {"type": "status"}
            if event.seq is not None:
                data["seq"] = event.seq
            data |= {
                "icon": event.icon,
                "message": event.message,
                "state": event.state,
                "tool": event.tool,
            }
            if event.call_id:
                data["call_id"] = event.call_id
            if event.progress is not None:
                data["progress"] = event.progress
                if event.total is not None:
                    data["total"] = event.total
            return data
        case ToolCall():
            return {
                "type": "tool_call",
                "seq": event.seq,
                "tool": event.tool,
                "call_id": event.call_id,
                "arguments": event.arguments,
            }
        case ToolResult():
            return (
                {
                    "type": "tool_result",
                    "seq": event.seq,
                    "call_id": event.call_id,
                    "ok": event.ok,
                    "summary": event.summary,
                    "duration_ms": event.duration_ms,
                }
                | _progress_of(event)
                | _links_of(event)
            )
        case Decision():
            return {
                "type": "decision",
                "seq": event.seq,
                "call_id": event.call_id,
                "tool": event.tool,
                "decision": event.decision,
                "by": event.by,
                "reason": event.reason,
                "waited_ms": event.waited_ms,
                "fingerprint": event.fingerprint,
                "edited_arguments": event.edited_arguments,
            }
        case TextDelta():
            return {"type": "text", "content": event.content}
        case ToolFeedback():
            return {"type": "tool_feedback", "call_id": event.call_id, "feedback": event.feedback}
        case Done():
            return {
                "type": "done",
                "message_id": event.message_id,
                "state": event.state,
                "summary": {"icon": event.summary_icon, "text": event.summary_text},
            }
    raise TypeError(f"not an event: {event!r}")


def _progress_of(result: ToolResult) -> dict[str, Any]:
    if not result.progress_count:
        return {}
    return {
        "progress": result.progress,
        "total": result.total,
        "progress_message": result.progress_message,
        "progress_count": result.progress_count,
    }


def _links_of(result: ToolResult) -> dict[str, Any]:
    return {"links": [link.to_json() for link in result.links]} if result.links else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def from_json(data: dict[str, Any]) -> WireEvent:
    """The inverse of to_json, for events that cross the channel layer."""
    kind = data.get("type")
    if kind == "status":
        return Status(
            icon=data["icon"],
            message=data["message"],
            state=status_state(data["state"]),
            tool=data.get("tool", ""),
            call_id=data.get("call_id", ""),
            seq=data.get("seq"),
            progress=_number(data.get("progress")),
            total=_number(data.get("total")),
        )
    if kind == "tool_call":
        return ToolCall(
            tool=data["tool"],
            call_id=data["call_id"],
            arguments=data["arguments"],
            seq=data.get("seq"),
        )
    if kind == "tool_result":
        return ToolResult(
            call_id=data["call_id"],
            ok=data["ok"],
            summary=data["summary"],
            duration_ms=data["duration_ms"],
            seq=data.get("seq"),
            progress=_number(data.get("progress")),
            total=_number(data.get("total")),
            progress_message=data.get("progress_message", ""),
            progress_count=data.get("progress_count", 0),
            links=links_from_json(data.get("links")),
        )
    if kind == "decision":
        return Decision(
            call_id=data["call_id"],
            tool=data.get("tool", ""),
            decision=decision_kind(data["decision"]),
            by=data.get("by", ""),
            reason=data.get("reason", ""),
            waited_ms=data.get("waited_ms", 0),
            seq=data.get("seq"),
            fingerprint=data.get("fingerprint", ""),
            edited_arguments=data.get("edited_arguments"),
        )
    if kind == "text":
        return TextDelta(content=data["content"])
    if kind == "tool_feedback":
        return ToolFeedback(call_id=data["call_id"], feedback=data["feedback"])
    if kind == "done":
        summary = data.get("summary") or {}
        return Done(
            message_id=data["message_id"],
            state=turn_state(data["state"]),
            summary_icon=summary.get("icon", ""),
            summary_text=summary.get("text", ""),
        )
    if kind == "turn":
        return TurnStarted(
            question_id=data["question_id"],
            message_id=data["message_id"],
            replaces=data.get("replaces", ""),
        )
    if kind == "error":
        return Error(message=data["message"])
    raise ValueError(f"unknown event type {kind!r}")
