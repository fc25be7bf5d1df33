"""A feed line as fields (seed 001's `render: "rich"`): icon, action, subject, detail,
outcome, duration and progress, for a page that lays them out and for programs that read them.
The fields hold the line's own compact text, split, never rewritten: joined they read as the
plain line, which every other reader (exports, clients that ignore fields) keeps.

Plain Python: the fields are text, escaped where they are shown like the line itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from activity.presenting.presentation import Line

# Where a subject starts: at its opening quote (the tools' “…”), else after ": " (the seed's
# `🛠️ Bash: run tests`).
QUOTES = ("“", '"', "「", "«", "‘")


@dataclass(frozen=True, slots=True)
class LineFields:
    icon: str
    action: str
    # The text the action is about; "" when the line names none.
    subject: str
    detail: str
    # The line's state: in_progress, waiting, done or failed.
    outcome: str
    duration_ms: int | None
    progress: float | None
    total: float | None

    @property
    def separator(self) -> str:
        """What stands between action and subject in the line's text."""
        return " " if self.subject[:1] in QUOTES else ": "

    def as_json(self) -> dict[str, Any]:
        progress = None
        if self.progress is not None:
            progress = {"value": self.progress, "total": self.total}
        return {
            "icon": self.icon,
            "action": self.action,
            "subject": self.subject,
            "detail": self.detail,
            "outcome": self.outcome,
            "duration_ms": self.duration_ms,
            "progress": progress,
        }


def own_text(line: Line) -> str:
    """The line's text without its raw detail."""
    if line.detail and line.message.endswith(f", {line.detail}"):
        return line.message[: -len(line.detail) - 2]
    return line.message


def split_action(text: str) -> tuple[str, str]:
    """`Searched the knowledge base for “salary”` → the action and `“salary”`;
    `Bash: run tests` → `Bash` and `run tests`; a line with neither is all action."""
    starts = [text.find(quote) for quote in QUOTES]
    quoted = min((i for i in starts if i > 0 and text[i - 1] == " "), default=-1)
    if quoted > 0:
        return text[: quoted - 1], text[quoted:]
    colon = text.find(": ")
    if colon > 0:
        return text[:colon], text[colon + 2 :]
    return text, ""


def fields_of(line: Line) -> LineFields:
    action, subject = split_action(own_text(line))
    return LineFields(
        icon=line.icon,
        action=action,
        subject=subject,
        detail=line.detail,
        outcome=line.state,
        duration_ms=line.duration_ms,
        progress=line.progress,
        total=line.total,
    )
