"""Running one tool call: as a task of its own, within its time limit, its progress shown
live (coalesced), and whatever happens turned into events and a result for the model."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from django.utils.translation import gettext as _

from activity.recording.events import LOG_LEVELS, Status, ToolCall, ToolLog, ToolResult
from chat.agent.calls import PendingCall, parse_arguments, raw_arguments
from chat.agent.context import ToolContext
from chat.agent.lines import fallback
from chat.agent.outcome import CallOutcome
from chat.agent.questions import CallState, in_call
from chat.agent.tools import ToolError, ToolOutcome, ToolRegistry, report_progress_to
from chat.agent.traceparent import trace_call

logger = logging.getLogger("glassbox.agent")


# A page shows at most this many progress updates a second of one call; the rest coalesce.
PROGRESS_PER_SECOND = 5
PROGRESS_MESSAGE_LIMIT = 200
# Beyond this many reports of one call, its closing line says how many were not shown.
PROGRESS_NOTED = 100
# Log messages of one call kept at each level: a chatty level cannot crowd out a rarer, more
# severe one, and a flood costs the record at most this many rows a level.
LOGS_PER_LEVEL = 10


@dataclass
class Progress:
    """What a running call last reported, and how often it reported."""

    value: float | None = None
    total: float | None = None
    message: str = ""
    count: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def report(
        self, value: float, total: float | None, message: str | None, count: int = 1
    ) -> None:
        if not isinstance(value, int | float) or value != value:  # NaN is no progress
            return
        self.value = float(value)
        self.total = float(total) if isinstance(total, int | float) and total > 0 else None
        if message:
            self.message = " ".join(str(message).split())[:PROGRESS_MESSAGE_LIMIT]
        self.count += count
        self.changed.set()


@dataclass
class Logs:
    """The log messages a running call's server sent: those kept wait to be recorded (each a
    ToolLog event, so history and exports keep them), the rest are counted."""

    call_id: str
    server: str
    waiting: list[ToolLog] = field(default_factory=list)
    kept: Counter[str] = field(default_factory=Counter)
    dropped: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def report(self, level: str, data: str, logger: str) -> None:
        if level not in LOG_LEVELS or self.kept[level] >= LOGS_PER_LEVEL:
            self.dropped += 1
            return
        self.kept[level] += 1
        self.waiting.append(
            ToolLog(
                call_id=self.call_id, level=level, data=data, logger=logger, server=self.server
            )
        )
        self.arrived.set()

    def not_kept(self, count: int) -> None:
        self.dropped += count

    def take(self) -> list[ToolLog]:
        taken, self.waiting = self.waiting, []
        self.arrived.clear()
        return taken


async def run_call(
    registry: ToolRegistry,
    call: PendingCall,
    context: ToolContext[Any],
    time_limit: float,
    shown: str,
    together: int = 1,
) -> AsyncIterator[Status | ToolLog | CallOutcome]:
    """Runs one call as a task of its own and yields its progress as live statuses (at most
    PROGRESS_PER_SECOND a second, the latest always shown) and its server's log messages as
    they come (at most LOGS_PER_LEVEL of each level), then its outcome. The call itself
    (ToolCall) is the caller's to record before this starts: see the_call."""
    progress = Progress()
    tool = registry.get(call.name)
    server = getattr(tool, "server", "")
    logs = Logs(call.call_id, server)
    task_context = report_progress_to(progress.report, logs)
    if server:
        # Only an MCP server's requests carry the span (chat.agent.traceparent): a built-in
        # tool's call needs neither it nor OpenTelemetry's API (1 MiB a process).
        trace_call(task_context, call.call_id)
    task = asyncio.create_task(
        run_tool(registry, call, context, time_limit, progress, together), context=task_context
    )
    interval = 1 / PROGRESS_PER_SECOND
    loop = asyncio.get_running_loop()
    last_shown = -interval
    shown_count = 0

    def latest() -> Status:
        nonlocal shown_count
        shown_count += 1
        progress.changed.clear()
        return Status(
            icon=tool.icon if tool else "🛠️",
            message=progress.message or shown,
            state="in_progress",
            tool=call.name,
            call_id=call.call_id,
            progress=progress.value,
            total=progress.total,
        )

    try:
        while True:
            changed = asyncio.ensure_future(progress.changed.wait())
            logged = asyncio.ensure_future(logs.arrived.wait())
            await asyncio.wait({task, changed, logged}, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()
            logged.cancel()
            for entry in logs.take():
                yield entry
            if not task.done() and not progress.changed.is_set():
                continue
            wait = last_shown + interval - loop.time()
            if not task.done() and wait > 0:
                await asyncio.wait({task}, timeout=wait)
            if task.done():
                break
            last_shown = loop.time()
            yield latest()
        for entry in logs.take():
            yield entry
        if progress.changed.is_set():
            # The last report came with the result, or while its predecessor's line was
            # still fresh: it is shown before the line that says how the call ended, so the
            # latest report always reaches the page.
            yield latest()
        yield logs_noted(flood_noted(task.result(), progress.count, shown_count), logs)
    finally:
        if not task.done():
            # Stop or the turn's end: cancelling the call tells an MCP server to stop too.
            task.cancel()
            await asyncio.wait({task}, timeout=2)


def flood_noted(outcome: CallOutcome, count: int, shown: int) -> CallOutcome:
    """A call that reported more than PROGRESS_NOTED times says on its closing line how many
    of its reports were not shown (they cost the record nothing)."""
    if count <= PROGRESS_NOTED or not outcome.lines:
        return outcome
    first, *rest = outcome.lines
    if not isinstance(first, Status):
        return outcome
    note = _("the server sent %(count)s progress messages; %(dropped)s were not shown") % {
        "count": f"{count:,}",
        "dropped": f"{count - shown:,}",
    }
    noted = replace(first, message=f"{first.message} — {note}")
    return CallOutcome(outcome.result, (noted, *rest))


def logs_noted(outcome: CallOutcome, logs: Logs) -> CallOutcome:
    """A call whose server sent more log messages than were kept says how many on its closing
    line (those kept are lines of their own)."""
    if not logs.dropped or not outcome.lines:
        return outcome
    first, *rest = outcome.lines
    if not isinstance(first, Status):
        return outcome
    count = logs.dropped + sum(logs.kept.values())
    note = _("the server sent %(count)s log messages; %(dropped)s were not kept") % {
        "count": f"{count:,}",
        "dropped": f"{logs.dropped:,}",
    }
    noted = replace(first, message=f"{first.message} — {note}")
    return CallOutcome(outcome.result, (noted, *rest))


def the_call(call: PendingCall) -> ToolCall:
    """The call as the audit keeps it: its arguments as sent when they parse as an object,
    else the raw text."""
    return ToolCall(tool=call.name, call_id=call.call_id, arguments=raw_arguments(call.arguments))


def done_message(outcome: ToolOutcome, together: int) -> str:
    """Seed 001: calls of one tool made together each say what they were about."""
    if together > 1 and outcome.subject:
        return _("%(done)s for “%(subject)s”") % {
            "done": outcome.done_message,
            "subject": outcome.subject,
        }
    return str(outcome.done_message)


async def run_tool(
    registry: ToolRegistry,
    call: PendingCall,
    context: ToolContext[Any],
    time_limit: float,
    progress: Progress | None = None,
    together: int = 1,
) -> CallOutcome:
    """Runs one call. Never raises: a failure becomes events and a short error for the model."""
    progress = progress or Progress()
    tool = registry.get(call.name)
    started = time.monotonic()
    outcome = None
    error = reason = ""
    state = CallState()
    try:
        if tool is None:
            raise ToolError(_("unknown tool"))
        parsed = parse_arguments(tool, call.arguments)[1]
        async with asyncio.timeout(time_limit) as clock:
            # A question the tool asks reaches this call, and stops its clock meanwhile.
            in_call(call.call_id, clock, state)
            outcome = await tool.run(parsed, context)
    except ToolError as exc:
        reason = error = str(exc)
    except TimeoutError:
        # Its clock ran out, or was run out by a bound it crossed (state.stopped says which).
        reason = state.stopped or _("timed out after %(seconds)s s") % {
            "seconds": f"{time_limit:g}"
        }
        error = f"TimeoutError: {reason}"
    except Exception:
        logger.exception("tool %s failed", call.name)
        reason = _("unexpected error")
        error = traceback.format_exc()
    duration_ms = int((time.monotonic() - started) * 1000)
    reported = partial(
        ToolResult,
        call_id=call.call_id,
        duration_ms=duration_ms,
        tool=call.name,
        server=getattr(tool, "server", ""),
        mcp_session_id=getattr(tool, "session_id", ""),
        progress=progress.value,
        total=progress.total,
        progress_message=progress.message,
        progress_count=progress.count,
    )
    if outcome is not None:
        assert tool is not None  # an outcome comes from a tool
        content = (
            outcome.content
            if isinstance(outcome.content, str)
            else json.dumps(outcome.content, ensure_ascii=False, default=str)
        )
        result = reported(
            ok=True,
            summary=outcome.summary,
            content=content,
            structured=outcome.structured,
            links=outcome.links,
        )
        if tool.quiet:
            shown = () if outcome.line is None else (replace(outcome.line, call_id=call.call_id),)
            return CallOutcome(result, shown)
        done = Status(
            icon=tool.labels.icon,
            message=done_message(outcome, together),
            state="done",
            tool=call.name,
            call_id=call.call_id,
        )
        if outcome.app is not None:
            return CallOutcome(result, (done, replace(outcome.app, call_id=call.call_id)))
        return CallOutcome(result, (done,))
    content = json.dumps({"error": reason})
    result = reported(ok=False, summary=reason, error=error, content=content)
    what = str(tool.labels.failed) if tool else _("Unknown tool %(tool)s") % {"tool": call.name}
    failed = Status(
        icon="❌",
        message=_("%(what)s (%(reason)s)") % {"what": what, "reason": reason},
        state="failed",
        tool=call.name,
        call_id=call.call_id,
    )
    if tool is not None and tool.quiet:
        # Nothing was looked up that the answer now goes without: the model is told why.
        return CallOutcome(result, (failed,))
    general = fallback(call.call_id, _("Answering from general knowledge"))
    return CallOutcome(result, (failed, general))
