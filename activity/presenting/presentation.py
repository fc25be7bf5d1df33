"""How a feed reads to a person: its visible lines and its one-line summary.

Plain Python (no ORM): the same rules serve the live stream, history and the admin. Texts it
writes come out in the active language (the turn's, while it runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, assert_never
from urllib.parse import urlsplit

from django.utils.formats import number_format
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from activity.presenting.bounded import cut_long
from activity.recording.events import (
    CONNECT,
    FEEDBACK_ARG,
    IN_PLACE,
    PLAN_LINE,
    REASONING,
    AppNote,
    AppView,
    Decision,
    Link,
    Plan,
    PlanStep,
    RecordedEvent,
    Score,
    Status,
    StatusState,
    ToolCall,
    ToolLog,
    ToolResult,
    at_least,
)

# Only these open from a feed; any other address (file:, a server's own scheme, javascript:)
# is shown as text.
WEB_SCHEMES = ("http", "https")


@dataclass(frozen=True, slots=True)
class ShownLink:
    """A tool result's link on its line: `href` only for a web address."""

    label: str
    uri: str
    href: str


def shown_links(links: Iterable[Link]) -> tuple[ShownLink, ...]:
    shown = []
    for link in links:
        try:
            web = urlsplit(link.uri).scheme.lower() in WEB_SCHEMES
        except ValueError:
            web = False
        shown.append(ShownLink(link.title or link.uri, link.uri, link.uri if web else ""))
    return tuple(shown)


@dataclass(frozen=True, slots=True)
class Line:
    key: str
    seq: int
    icon: str
    message: str
    state: str
    tool: str
    # The whole text when `message` was shortened (the tooltip and the exports show it).
    full: str = ""
    duration_ms: int | None = None
    # A tool's own progress report: a bar, without a total an indeterminate one.
    progress: float | None = None
    total: float | None = None
    # A 💭 line's reasoning, when the site shows it (GLASSBOX_SHOW_REASONING=full).
    reasoning: str = ""
    call_id: str = ""
    # What the finished tool's result pointed to.
    links: tuple[ShownLink, ...] = ()
    # The raw detail `message` ends with (", " and this), as shown: the fields keep it apart.
    detail: str = ""
    # Laid out as fields (RENDER rich, activity.presenting.line_fields) rather than one text.
    rich: bool = False
    # A plan's line (seed 001's task plan): its checklist.
    steps: tuple[PlanStep, ...] = ()
    # A running call's line: the log messages its MCP server sent, at the reader's level.
    logs: tuple[ToolLog, ...] = ()
    # A finished call's own interface (MCP Apps): the page frames it under the line.
    app: AppView | None = None

    @property
    def is_reasoning(self) -> bool:
        return self.tool == REASONING

    @property
    def thinking(self) -> bool:
        """A model still thinking: the page counts the seconds on this line."""
        return self.tool == REASONING and self.state == "in_progress"

    @property
    def connect_server(self) -> str:
        """The MCP server a 🔑 line asks its user to connect (its link opens the authorization)."""
        return self.call_id.removeprefix("connect-") if self.tool == CONNECT else ""

    @property
    def percent(self) -> int | None:
        if self.progress is None or not self.total:
            return None
        return max(0, min(100, round(100 * self.progress / self.total)))


@dataclass(frozen=True, slots=True)
class ToolLabels:
    """What a tool is called in a summary: `📄 Searched the knowledge base`."""

    icon: str
    # Lazy translations are welcome: they are read in the turn's language.
    done: str | Promise
    failed: str | Promise


# What a folded feed's line may hold (ActivityFeed.summary_text); its last line keeps the rest.
SUMMARY_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Summary:
    icon: str
    text: str

    def __post_init__(self) -> None:
        # A failure's line can carry the provider's own words: the fold keeps their start.
        object.__setattr__(self, "text", cut(self.text, SUMMARY_LIMIT))


# The state of a line whose step a stopped, failed or interrupted turn never finished: neither
# done nor failed.
UNFINISHED = "unfinished"


def line_key(status: Status) -> str:
    # A call's running line is replaced in place by its later running lines; a 💭 line also
    # by the time the thinking took, a 🔄 line by its end.
    if status.call_id and (status.state in ("in_progress", "waiting") or status.tool in IN_PLACE):
        return f"call-{status.call_id}"
    return f"seq-{status.seq}"


def cut(text: str, width: int) -> str:
    """Keeps the readable start, so a line updated in place never reflows."""
    if len(text) <= width:
        return text
    return text[: width - 1].rstrip() + "…"


def raw_detail(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in arguments.items() if k != FEEDBACK_ARG)


def cut_middle(text: str, width: int) -> str:
    """Keeps both ends: the start says what it is, the end often what differs."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[: max(width - 1, 0)] + "…"
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[len(text) - tail :]


# The least of a raw detail a line keeps beside its message, when the width has room for it.
DETAIL_ROOM = 40


def line_for(status: Status, *, width: int = 80, detail: str = "") -> Line:
    """Seed 001: one line that keeps its height when it is updated in place. Its text is cut
    at the reader's width (LINE_WIDTH; 0 leaves it whole, for programs) in its middle, so the
    start says what it is and the end what came of it; the whole text is kept in `full` (the
    tooltip, and the line's text while it has the focus). A raw detail shares the width."""
    whole = f"{status.message}, {detail}" if detail else status.message
    if not width:
        message, shown_detail = status.message, detail
    elif detail:
        room = min(len(detail), DETAIL_ROOM, max(width // 2 - 2, 1))
        message = cut_middle(status.message, max(width - room - 2, 1))
        shown_detail = cut_middle(detail, max(width - len(message) - 2, 1))
    else:
        message, shown_detail = cut_middle(status.message, width), ""
    shown = f"{message}, {shown_detail}" if detail else message
    return Line(
        key=line_key(status),
        seq=status.seq or 0,
        icon=status.icon,
        message=shown,
        state=status.state,
        tool=status.tool,
        # A title attribute: the whole text up to the frame's bound (one line is no place
        # for a tool's 100 KB message).
        full=cut_long(whole) if shown != whole else "",
        progress=status.progress,
        total=status.total,
        call_id=status.call_id,
        detail=shown_detail,
    )


# The tool whose calls make the plan (chat.tools.plan): its line is the plan's.
PLAN_TOOL = "update_plan"
PLAN_ICON = "📋"


def plan_message(plan: Plan) -> str:
    """What the plan's line says: how far it is and the step under way."""
    count = len(plan.steps)
    current = plan.current
    if current is None:
        return ngettext("Plan: its one step is done", "Plan: all %(count)d steps done", count) % {
            "count": count
        }
    return _("Plan, %(done)d of %(count)d done: %(step)s") % {
        "done": plan.done,
        "count": count,
        "step": current.text,
    }


def plan_status(plan: Plan) -> Status:
    """The plan as the status its line stands for (its times, its state)."""
    state: StatusState = "in_progress" if plan.current is not None else "done"
    return Status(
        icon=PLAN_ICON, message=plan_message(plan), state=state, tool=PLAN_TOOL, seq=plan.seq
    )


def plan_line(plan: Plan, width: int = 80) -> Line:
    """One line for the plan whichever call set it, so each update replaces it in place."""
    line = line_for(plan_status(plan), width=width)
    return replace(line, key=PLAN_LINE, call_id=plan.call_id, steps=plan.steps)


def plan_summary(plan: Plan) -> Summary:
    return Summary(PLAN_ICON, plan_message(plan))


def shown_logs(logs: Iterable[ToolLog], level: str) -> tuple[ToolLog, ...]:
    """The log messages a reader who chose `level` sees."""
    return tuple(log for log in logs if at_least(log.level, level))


def decision_status(decision: Decision) -> Status:
    """The line a decision puts where its call's waiting line (and its buttons) stood."""
    state: StatusState = "failed"
    if decision.decision == "approve":
        icon, message, state = "✅", _("Approved by %(user)s") % {"user": decision.by}, "done"
    elif decision.decision == "deny":
        icon = "🚫"
        message = _("Denied by %(user)s") % {"user": decision.by}
        if decision.reason:
            message = _("%(what)s: %(reason)s") % {"what": message, "reason": decision.reason}
    else:
        icon, message = "⌛", _("Not approved in time")
    return Status(
        icon=icon, message=message, state=state, tool=decision.tool, call_id=decision.call_id,
        seq=decision.seq,
    )  # fmt: skip


def refused_summary(decision: Decision) -> Summary:
    if decision.decision == "deny":
        return Summary("🚫", _("Denied"))
    return Summary("⌛", _("Not approved in time"))


def refused_calls(events: Iterable[RecordedEvent]) -> set[str]:
    """The calls a decision kept from running: their failed results are no tool failures."""
    return {e.call_id for e in events if isinstance(e, Decision) and not e.approved}


def decision_line(decision: Decision, width: int = 80) -> Line:
    """Keyed as the call's running line, so it replaces the waiting one (and its buttons)."""
    line = line_for(decision_status(decision), width=width)
    return replace(line, key=f"call-{decision.call_id}")


def visible_lines(
    events: Sequence[RecordedEvent],
    *,
    times: Sequence[datetime] | None = None,
    finished_at: datetime | None = None,
    detail: str = "explain",
    width: int = 80,
    show_reasoning: str = "full",
    reasoning: Mapping[str, str] | None = None,
    render: str = "plain",
    cut: bool = False,
    log_level: str = "warning",
) -> list[Line]:
    """Status events in order; a later in-progress status of the same call replaces its line
    where it stands, exactly as it did live. With times, each line carries how long its step
    took: a tool's result line the tool's own run time, the final line the whole turn, any
    other line the time until the next line began. A turn `cut` before it completed
    (stopped, failed, interrupted) marks the steps it never finished as such, not done.
    The plan is one line where it first stood, as its last update left it; a call's MCP log
    messages at `log_level` or above are under its running line."""
    calls = _Calls.of(events)
    lines: dict[str, Line] = {}
    made_by: dict[str, Status] = {}
    started: dict[str, datetime] = {}
    for index, event in enumerate(events):
        match event:
            case Decision():
                line = replace(decision_line(event, width), rich=render == "rich")
                made = decision_status(event)
            case Status() if event.tool == REASONING and show_reasoning == "off":
                continue
            case Status():
                line = _status_line(event, calls, detail, width, show_reasoning, reasoning, render)
                logs = shown_logs(calls.logs.get(event.call_id, ()), log_level)
                if logs and line.key == f"call-{event.call_id}":
                    line = replace(line, logs=logs)
                made = event
            case Plan():
                line = replace(plan_line(event, width), rich=render == "rich")
                made = plan_status(event)
            case ToolCall() | ToolResult() | ToolLog() | AppView():
                continue  # shown on their call's lines
            case Score():
                continue  # shown by the rating controls of its target
            case AppNote():
                continue  # what an app said is kept for the audit, not a line of the work
            case _:
                assert_never(event)
        lines[line.key] = line
        made_by[line.key] = made
        if times is not None:
            started.setdefault(line.key, times[index])
    ordered = list(lines.values())
    if cut:
        ordered = [
            replace(line, state=UNFINISHED)
            if line.state == "in_progress" and line.call_id not in calls.run_times
            else line
            for line in ordered
        ]
    if times is None or not ordered:
        return ordered
    timed = []
    for position, line in enumerate(ordered):
        status = made_by[line.key]
        if line.key == PLAN_LINE:
            duration = None  # the plan is no step: it stands over them
        elif status.state != "in_progress" and status.call_id in calls.run_times:
            duration = calls.run_times[status.call_id]
        elif position + 1 < len(ordered):
            duration = _ms(started[line.key], started[ordered[position + 1].key])
        elif status.state == "done" and finished_at is not None:
            duration = _ms(times[0], finished_at)
        else:
            duration = None
        timed.append(replace(line, duration_ms=duration))
    return timed


@dataclass
class _Calls:
    """What the calls of a feed add to their lines: arguments, run times, the last progress
    they reported, what they pointed to, and which failed."""

    arguments: dict[str, dict[str, Any]]
    run_times: dict[str, int]
    reported: dict[str, tuple[float | None, float | None]]
    pointed: dict[str, tuple[Link, ...]]
    failed: set[str]
    # The last progress text a call reported: its running line ended on it, live.
    said: dict[str, str]
    # The log messages each call's MCP server sent during it.
    logs: dict[str, list[ToolLog]]
    # Each call's own interface (MCP Apps).
    apps: dict[str, AppView]

    @classmethod
    def of(cls, events: Iterable[RecordedEvent]) -> _Calls:
        calls = cls({}, {}, {}, {}, set(), {}, {}, {})
        for event in events:
            match event:
                case ToolCall():
                    calls.arguments[event.call_id] = event.arguments
                case ToolResult():
                    calls.result(event)
                case ToolLog():
                    calls.logs.setdefault(event.call_id, []).append(event)
                case AppView():
                    calls.apps[event.call_id] = event
                case Status() | Decision() | Plan() | Score() | AppNote():
                    pass
                case _:
                    assert_never(event)
        return calls

    def result(self, result: ToolResult) -> None:
        self.run_times[result.call_id] = result.duration_ms
        if result.progress_count and result.progress is not None:
            self.reported[result.call_id] = (result.progress, result.total)
        if result.progress_count and result.progress_message:
            self.said[result.call_id] = result.progress_message
        if result.links:
            self.pointed[result.call_id] = result.links
        # A call that failed (or was refused) did not finish its step: its line says so.
        if not result.ok:
            self.failed.add(result.call_id)


def _status_line(
    event: Status,
    calls: _Calls,
    detail: str,
    width: int,
    show_reasoning: str,
    reasoning: Mapping[str, str] | None,
    render: str,
) -> Line:
    extra = ""
    running = event.state in ("in_progress", "waiting")
    if detail == "raw" and running and event.call_id in calls.arguments:
        extra = raw_detail(calls.arguments[event.call_id])
    if event.state == "in_progress" and event.call_id in calls.said:
        event = replace(event, message=calls.said[event.call_id])
    line = line_for(event, width=width, detail=extra)
    if render == "rich":
        line = replace(line, rich=True)
    if event.state != "in_progress" and event.call_id in calls.reported:
        progress, total = calls.reported[event.call_id]
        line = replace(line, progress=progress, total=total)
    if event.state == "in_progress" and event.call_id in calls.failed:
        line = replace(line, state="failed")
    if event.state == "done" and event.call_id in calls.pointed:
        line = replace(line, links=shown_links(calls.pointed[event.call_id]))
    if event.state == "done" and event.call_id in calls.apps:
        line = replace(line, app=calls.apps[event.call_id])
    if event.tool == REASONING and show_reasoning == "full" and reasoning:
        line = replace(line, reasoning=reasoning.get(event.call_id, ""))
    return line


def seconds(milliseconds: int) -> str:
    """A step's duration in the reader's notation: "1.2 s", "1,2 s", "1.2 秒"."""
    value = milliseconds / 1000
    shown = number_format(value, decimal_pos=1 if value < 10 else 0, force_grouping=True)
    return _("%(seconds)s s") % {"seconds": shown}


def _ms(start: datetime, end: datetime) -> int:
    return max(int((end - start).total_seconds() * 1000), 0)


def summarize(
    events: Iterable[RecordedEvent],
    labels: Mapping[str, ToolLabels],
    show_reasoning: str = "full",
    *,
    stopped: bool = False,
) -> Summary | None:
    """The folded feed's one line. None when the model answered directly (nothing to show);
    a model that only thought says how long (unless the site hides its thinking). A turn
    its owner `stopped` ends with its ⏹ line, which is done (not failed) like a finished
    turn's ✅: the caller says which it was."""
    tools_by_call: dict[str, str] = {}
    results: list[ToolResult] = []
    last_status: Status | None = None
    refused: dict[str, Decision] = {}
    plan: Plan | None = None
    for event in events:
        match event:
            case Decision(decision="deny" | "timeout"):
                refused[event.call_id] = event
            case Decision() | Score() | AppNote():
                pass
            case ToolCall():
                tools_by_call[event.call_id] = event.tool
            case ToolResult():
                results.append(event)
            case Status() if event.tool == REASONING and show_reasoning == "off":
                pass
            case Status():
                last_status = event
            case Plan():
                plan = event
            case ToolLog() | AppView():
                pass
            case _:
                assert_never(event)
    if plan is not None:
        # Planning is no tool the turn used: its calls are its plan's line, not a count.
        tools_by_call = {c: tool for c, tool in tools_by_call.items() if tool != PLAN_TOOL}
        broke_off = stopped or (last_status is not None and last_status.state == "failed")
        if not tools_by_call and not broke_off:
            return plan_summary(plan)
    if not tools_by_call:
        # No tool ran: only a failure or a stop leaves lines, and the last one says it best.
        return Summary(last_status.icon, last_status.message) if last_status else None
    if last_status and not last_status.tool and (stopped or last_status.state == "failed"):
        # Seed 002: a turn that was stopped or broke off folds to what happened to it, not to
        # the tools it had used by then.
        return Summary(last_status.icon, last_status.message)

    fallback = ToolLabels(icon="🛠️", done=_("Used a tool"), failed=_("A tool failed"))
    # A call the owner denied (or nobody approved in time) did not fail: it was decided.
    failed = [r for r in results if not r.ok and r.call_id not in refused]
    if not failed and refused:
        return refused_summary(next(iter(refused.values())))
    if failed:
        tool = failed[0].tool or tools_by_call.get(failed[0].call_id, "")
        return Summary("⚠️", str(labels.get(tool, fallback).failed))
    count = len(tools_by_call)
    used = set(tools_by_call.values())
    if count > 1 and len(used) == 1:
        # Seed 001: one tool called twice is that tool, twice, not "2 tools".
        label = labels.get(used.pop(), fallback)
        done = str(label.done)
        if count == 2:
            return Summary(label.icon, _("%(done)s twice") % {"done": done})
        return Summary(label.icon, _("%(done)s %(count)d times") % {"done": done, "count": count})
    if count > 1:
        return Summary(
            "🛠️", ngettext("Used %(count)d tool", "Used %(count)d tools", count) % {"count": count}
        )
    (tool,) = tools_by_call.values()
    label = labels.get(tool, fallback)
    return Summary(label.icon, str(label.done))
