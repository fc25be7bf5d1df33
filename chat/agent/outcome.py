"""How one tool call of the agent ended, whether it ran, failed, or was refused."""

from __future__ import annotations

from dataclasses import dataclass

from activity.recording.events import AppView, Plan, Status, ToolResult


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The result the audit keeps, whose `content` is what the model is told, and the lines
    people see after it: ✅ done, or ❌ and the 🔄 fallback, or the fallback of a refusal; a
    quiet tool's own line (the plan) instead of ✅."""

    result: ToolResult
    lines: tuple[Status | Plan | AppView, ...]

    @property
    def told(self) -> str:
        """What the model reads as the call's answer."""
        return self.result.content
