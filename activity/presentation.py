"""How a feed reads to a person: its visible lines and its one-line summary.

Plain Python (no ORM): the same rules serve the live stream, history and the admin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from activity.events import RecordedEvent, Status, ToolCall, ToolResult


@dataclass(frozen=True, slots=True)
class Line:
    key: str
    seq: int
    icon: str
    message: str
    state: str
    tool: str


@dataclass(frozen=True, slots=True)
class ToolLabels:
    """What a tool is called in a summary: `📄 Searched the knowledge base`."""

    icon: str
    done: str
    failed: str


@dataclass(frozen=True, slots=True)
class Summary:
    icon: str
    text: str


def line_key(status: Status) -> str:
    if status.call_id and status.state == "in_progress":
        return f"call-{status.call_id}"
    return f"seq-{status.seq}"


def line_for(status: Status) -> Line:
    return Line(
        key=line_key(status),
        seq=status.seq or 0,
        icon=status.icon,
        message=status.message,
        state=status.state,
        tool=status.tool,
    )


def visible_lines(events: Iterable[RecordedEvent]) -> list[Line]:
    """Status events in order; a later in-progress status of the same call replaces its line
    where it stands, exactly as it did live."""
    lines: dict[str, Line] = {}
    for event in events:
        if isinstance(event, Status):
            line = line_for(event)
            lines[line.key] = line
    return list(lines.values())


def summarize(events: Iterable[RecordedEvent], labels: Mapping[str, ToolLabels]) -> Summary | None:
    """The folded feed's one line. None when the model answered directly (nothing to show)."""
    tools_by_call: dict[str, str] = {}
    results: list[ToolResult] = []
    last_status: Status | None = None
    for event in events:
        if isinstance(event, ToolCall):
            tools_by_call[event.call_id] = event.tool
        elif isinstance(event, ToolResult):
            results.append(event)
        elif isinstance(event, Status):
            last_status = event
    if not tools_by_call:
        # No tool ran: only a failure or a stop leaves lines, and the last one says it best.
        return Summary(last_status.icon, last_status.message) if last_status else None

    fallback = ToolLabels(icon="🛠️", done="Used a tool", failed="A tool failed")
    failed = [r for r in results if not r.ok]
    if failed:
        tool = failed[0].tool or tools_by_call.get(failed[0].call_id, "")
        return Summary("⚠️", labels.get(tool, fallback).failed)
    if len(tools_by_call) > 1:
        return Summary("🛠️", f"Used {len(tools_by_call)} tools")
    (tool,) = tools_by_call.values()
    label = labels.get(tool, fallback)
    return Summary(label.icon, label.done)
