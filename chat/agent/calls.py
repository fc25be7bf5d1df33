"""The tool calls of a streamed reply, assembled from their deltas (parallel calls,
arguments in many chunks), announced as soon as their name arrives and their
feedback_to_user as soon as it is complete; and their arguments, parsed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jiter
from django.utils.translation import gettext as _

from activity.recording.events import Status, ToolFeedback
from chat.agent.chunks import ToolDelta
from chat.agent.tools import FEEDBACK_ARG, AgentTool, ToolError, ToolRegistry, truncate_feedback
from project.text_rules import storable


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

    def feed(self, delta: ToolDelta) -> list[Status | ToolFeedback]:
        call = self.calls.setdefault(delta.index, PendingCall(index=delta.index))
        if delta.id and not call.call_id:
            call.call_id = delta.id
        if delta.name and not call.name:
            call.name = delta.name
        call.arguments += delta.arguments
        if not call.name:
            return []
        if not call.call_id:
            call.call_id = f"call_{self.round_number}_{call.index}"
        statuses: list[Status | ToolFeedback] = []
        tool = self.registry.get(call.name)
        if not call.announced:
            call.announced = True
            if not (tool and tool.quiet):
                statuses.append(self._status(call, tool, working_message(tool, call.name)))
        if not call.feedback_shown and FEEDBACK_ARG in call.arguments:
            feedback = finished_feedback(call.arguments)
            if feedback is not None:
                call.feedback_shown = True
                feedback = truncate_feedback(feedback)
                if feedback:  # an empty one keeps the tool's own line
                    statuses.append(self._status(call, tool, feedback))
                statuses.append(ToolFeedback(call_id=call.call_id, feedback=feedback))
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


def finished_feedback(arguments: str) -> str | None:
    """feedback_to_user once its string is complete in still-streaming JSON ('' for an empty
    one), else None. jiter's partial mode leaves out a string that is not closed yet."""
    try:
        parsed = jiter.from_json(arguments.encode(), partial_mode="on")
    except ValueError:
        return None
    value = parsed.get(FEEDBACK_ARG) if isinstance(parsed, dict) else None
    return value.strip() if isinstance(value, str) else None


def parse_arguments(tool: AgentTool, raw: str) -> tuple[dict[str, Any], Any]:
    """The arguments as sent (for the audit) and as the tool's model validated them."""
    try:
        arguments = json.loads(raw or "{}")
    except ValueError:
        raise ToolError(_("malformed arguments")) from None
    if not isinstance(arguments, dict):
        raise ToolError(_("arguments are not an object"))
    return arguments, tool.parse(arguments)


def raw_arguments(raw: str) -> dict[str, Any]:
    """The model's arguments as the call's record keeps them (what the tool is handed is
    read apart): parsed, or the text it sent, without what no database stores."""
    try:
        parsed = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": storable(raw[:2000])}
    return storable(parsed) if isinstance(parsed, dict) else {"_raw": storable(raw[:2000])}


def is_json(raw: str) -> bool:
    try:
        json.loads(raw or "{}")
    except ValueError:
        return False
    return True
