"""A call a tool's own interface makes (MCP Apps `tools/call`): to its own server only, to a
tool that lets apps call it, within APP_CALLS per app. It is written ahead, run and recorded
as the model's calls are (chat.agent.running), appended to the answer's feed and sealed,
marked as coming from the app. A tool that asks first waits for its owner's decision as the
model's calls do (chat.asks.approvals: card, inbox, deadline, receipt), though its turn has
ended: the call is written ahead with its ⏸ line, and the decision, in whichever process it
arrives, runs it (or records why not) in a task of its own. The app's bridge learns the
outcome by asking `outcome` until there is one: a poll survives a socket that reconnects and
a decision taken in another process, tab or route, which a pushed frame would not."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import uuid
from dataclasses import replace
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.http import Http404
from django.utils.translation import gettext as _

from activity.recording.events import FEEDBACK_ARG, CallOrigin, Status, ToolCall, ToolResult
from activity.writing import feeds
from chat.agent.approval import refused
from chat.agent.calls import PendingCall
from chat.agent.mcp import app_tool
from chat.agent.outcome import CallOutcome
from chat.agent.running import run_tool
from chat.agent.tools import AgentTool, ToolRegistry
from chat.asks import approvals
from chat.conversations import selectors
from chat.models import ToolApproval
from chat.servers.configured import configured_servers, mcp_limits
from chat.turns import deps
from chat.turns.policy import agent_policy

logger = logging.getLogger("glassbox.turns")

# Calls one app may make in all (its feed keeps each): a looping app stops here.
APP_CALLS = 50
ARGUMENTS_LIMIT = 16 * 1024
ORIGIN: CallOrigin = "app"


class AppCallRefused(Exception):
    """Why the app's call did not run, in words the app is told (and the person sees)."""


async def app_call(user: Any, message_id: int, call_id: str, name: Any, arguments: Any) -> dict:
    """Runs the call the app of `call_id` (in the user's answer `message_id`) asked for; its
    result as MCP's `CallToolResult`, or AppCallRefused."""
    shown = await database_sync_to_async(selectors.app_shown)(user, message_id, call_id)
    if not isinstance(name, str) or not isinstance(arguments, dict):
        raise AppCallRefused(_("a call needs a tool's name and its arguments"))
    if len(json.dumps(arguments, ensure_ascii=False)) > ARGUMENTS_LIMIT:
        raise AppCallRefused(_("the arguments are too long"))
    made = await database_sync_to_async(selectors.app_calls_made)(shown.feed_id)
    if made >= APP_CALLS:
        raise AppCallRefused(_("this app made %(count)d calls, all it may") % {"count": made})
    specs = await configured_servers()
    tool = await app_tool(specs, shown.app.server, name, mcp_limits())
    if tool is None:
        raise AppCallRefused(
            _("%(server)s has no tool %(tool)s that its app may call")
            % {"server": shown.app.server, "tool": name[:64]}
        )
    policy = agent_policy()
    call = PendingCall(0, f"{ORIGIN}-{uuid.uuid4().hex[:16]}", tool.name, json.dumps(arguments))
    # Write-ahead: the call is in the record before the server hears of it.
    written = ToolCall(tool=tool.name, call_id=call.call_id, arguments=arguments, origin=ORIGIN)
    if policy.asks_first(tool):
        await database_sync_to_async(_wait)(shown, written, tool, name)
        raise AppCallWaits(call.call_id)
    await database_sync_to_async(feeds.append_late)(shown.feed_id, written)
    result = await _run(user, shown.feed_id, shown.conversation_id, tool, call)
    return _call_tool_result(result)


class AppCallWaits(Exception):
    """The call waits for its owner's decision; its id is what `outcome` is asked with."""

    def __init__(self, call_id: str) -> None:
        super().__init__(call_id)
        self.call_id = call_id


def _wait(shown: selectors.AppShown, written: ToolCall, tool: AgentTool, name: str) -> None:
    """The call and its ⏸ line in the record, with the wait they open, in one transaction:
    whoever sees the card can decide, in any process."""
    title = str(tool.title or tool.name)
    line = Status(
        icon="⏸",
        message=_("From the app: %(line)s")
        % {"line": _("%(what)s — waiting for your approval") % {"what": title}},
        state="waiting",
        tool=tool.name,
        call_id=written.call_id,
    )
    with transaction.atomic():
        feeds.append_late(shown.feed_id, written)
        feeds.append_late(shown.feed_id, line)
        approvals.open_app_wait(
            answer_id=shown.answer_id,
            call=written,
            title=title,
            parameters=_as_the_app_calls_it(tool.schema.get("function", {}).get("parameters")),
            app_of=shown.app.call_id,
            server=shown.app.server,
            server_tool=name,
            deadline_seconds=settings.GLASSBOX_APPROVAL_TIMEOUT,
        )


def _as_the_app_calls_it(parameters: Any) -> dict[str, Any] | None:
    """The tool's parameters without the line the model is asked to write for the person
    (FEEDBACK_ARG): an app writes none, so an edit on the card must not ask for one."""
    if not isinstance(parameters, dict):
        return None
    kept = dict(parameters)
    if isinstance(kept.get("properties"), dict):
        kept["properties"] = {k: v for k, v in kept["properties"].items() if k != FEEDBACK_ARG}
    if isinstance(kept.get("required"), list):
        kept["required"] = [name for name in kept["required"] if name != FEEDBACK_ARG]
    return kept


async def _run(
    user: Any, feed_id: int, conversation_id: Any, tool: AgentTool, call: PendingCall
) -> ToolResult:
    policy = agent_policy()
    person = await database_sync_to_async(deps.person)(user)
    context = deps.current().tool_context(
        user=person, conversation_id=conversation_id, language=policy.language
    )
    outcome = await run_tool(ToolRegistry.of([tool]), call, context, policy.tool_timeout)
    await _record(feed_id, outcome)
    return outcome.result


async def _record(feed_id: int, outcome: CallOutcome) -> None:
    for line in (outcome.result, *outcome.lines):
        if isinstance(line, Status):
            line = replace(line, message=_("From the app: %(line)s") % {"line": line.message})
        await database_sync_to_async(feeds.append_late)(feed_id, line)


# Decided calls running here: a task is kept until it ends (asyncio keeps weak references).
_decided: set[asyncio.Task[None]] = set()


def launch_decided(claimed: approvals.Claimed) -> None:
    """Runs an app's call its owner approved, or records why it did not run, in a task of
    its own: the decision's sender (a socket, a form, the API) does not wait for the tool."""
    task = asyncio.create_task(
        _go_on(claimed), name=f"app-call-{claimed.approval.pk}", context=contextvars.Context()
    )
    _decided.add(task)
    task.add_done_callback(_decided.discard)


def running() -> list[asyncio.Task[None]]:
    """The decided calls this process still runs or records."""
    return list(_decided)


async def _go_on(claimed: approvals.Claimed) -> None:
    try:
        await _decided_call(claimed)
    except Exception:  # logged, not lost with the task: the app then hears of no outcome
        logger.exception("the app's call %s could not go on", claimed.approval.call_id)


async def _decided_call(claimed: approvals.Claimed) -> None:
    approval = claimed.approval
    feed_id = approval.answer.feed_id
    assert feed_id is not None  # it showed an app
    verdict = claimed.verdict
    arguments = verdict.edited_arguments or approval.arguments
    call = PendingCall(0, approval.call_id, approval.tool, json.dumps(arguments))
    tool = None
    if verdict.approved:
        specs = await configured_servers()
        server, name = approval.state.get("server", ""), approval.state.get("tool", "")
        tool = await app_tool(specs, server, name, mcp_limits())
        if tool is None:
            verdict = replace(verdict, approved=False, reason=_("Its server no longer offers it"))
    if tool is None or not verdict.approved:
        # Its result says why it did not run; the model's "answering without it" is no app's.
        await _record(feed_id, CallOutcome(refused(call, verdict).result, ()))
        return
    owner = await database_sync_to_async(lambda: approval.answer.conversation.owner)()
    await _run(owner, feed_id, approval.answer.conversation_id, tool, call)


def outcome(user: Any, message_id: int, app_of: str, call_id: str) -> dict[str, Any] | None:
    """What the bridge answers the app for a call that waited: MCP's `CallToolResult`, or a
    JSON-RPC error in words; None while it waits (or runs). A wait past its deadline that no
    watch has settled yet is left to it, so this read never decides."""
    shown = selectors.app_shown(user, message_id, app_of)
    approval = ToolApproval.objects.filter(
        answer_id=shown.answer_id, app_of=app_of, call_id=call_id
    ).first()
    if approval is None:
        raise Http404(_("This app made no such call."))
    if approval.decision in ("deny", "timeout", "stopped"):
        return {"error": _denied(approval)}
    result = selectors.tool_result_of(shown.feed_id, call_id)
    if result is None:
        return None
    return {"result": _call_tool_result(result)}


def _denied(approval: ToolApproval) -> str:
    if approval.decision == "timeout":
        return _("Nobody approved this call in time; it did not run")
    told = _("The user denied this call")
    if approval.reason:
        told = _("%(what)s: %(reason)s") % {"what": told, "reason": approval.reason}
    return told


def _call_tool_result(result: ToolResult) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "content": [{"type": "text", "text": result.content if result.ok else result.summary}],
        "isError": not result.ok,
    }
    if result.structured is not None:
        answer["structuredContent"] = result.structured
    return answer
