"""A call that must be approved first: the loop pauses there (Paused, everything it needs to
go on later in any process) and goes on from the owner's decision (Verdict)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from activity.recording.events import Status, ToolResult
from chat.agent.calls import PendingCall
from chat.agent.lines import fallback
from chat.agent.outcome import CallOutcome


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


def waiting(call: PendingCall, shown: str) -> Status:
    what = shown or _("Running %(tool)s…") % {"tool": call.name}
    return Status(
        icon="⏸",
        message=_("%(what)s — waiting for your approval") % {"what": what.rstrip("…")},
        state="waiting",
        tool=call.name,
        call_id=call.call_id,
    )


def refused(call: PendingCall, verdict: Verdict) -> CallOutcome:
    """A call that was denied or timed out: the model learns why, and answers without it."""
    content = json.dumps({"error": verdict.reason}, ensure_ascii=False)
    result = ToolResult(
        call_id=call.call_id, ok=False, summary=verdict.reason, duration_ms=0, tool=call.name,
        content=content,
    )  # fmt: skip
    return CallOutcome(result, (fallback(call.call_id, _("Answering without it")),))
