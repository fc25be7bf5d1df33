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
    # The waiting tool's parameters (its JSON schema), kept beside the state for the card's
    # edit form; not part of the state.
    parameters: dict[str, Any] | None = None
    # Its tool's name for people as the card shows it, kept beside the state too: an MCP
    # server's title is known only to the turn that asked it.
    title: str = ""
    type: str = "paused"

    @property
    def call(self) -> dict[str, str]:
        return self.pending[0]

    def as_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "conversation": self.conversation,
            "round": self.round,
            "pending": self.pending,
        }

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> Paused:
        """A stored pause of this release or an earlier one: version 1 (written without a
        version) has the same three fields. A newer version than this code knows is refused
        rather than half read (a process of the last release while another is deployed)."""
        version = data.get("version", 1)
        if version not in READABLE_VERSIONS:
            raise UnknownPause(f"paused state version {version!r} is newer than this code")
        return cls(conversation=data["conversation"], round=data["round"], pending=data["pending"])


# The shape of Paused.as_state; bump it when the state changes, and keep reading the old ones.
STATE_VERSION = 2
READABLE_VERSIONS = (1, 2)


class UnknownPause(ValueError):
    """A stored pause this code cannot read."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on the waiting call, as the loop goes on from it."""

    call_id: str
    approved: bool
    # What the model is told when the call did not run.
    reason: str = ""
    # The receipt: the fingerprint of the arguments approved, checked just before the call
    # runs, and the arguments the owner changed them to (None: as the model asked).
    fingerprint: str = ""
    edited_arguments: dict[str, Any] | None = None


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
