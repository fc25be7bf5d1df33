"""A call a tool's own interface makes (MCP Apps `tools/call`): to its own server only, to a
tool that lets apps call it, within APP_CALLS per app. It is written ahead, run and recorded
as the model's calls are (chat.agent.running), appended to the answer's feed and sealed,
marked as coming from the app. A tool that asks first is refused, never run unasked: the
approval card belongs to a turn, and an app's call is none (yet)."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

from channels.db import database_sync_to_async
from django.utils.translation import gettext as _

from activity.recording.events import CallOrigin, Status, ToolCall, ToolResult
from activity.writing import feeds
from chat.agent.calls import PendingCall
from chat.agent.mcp import app_tool
from chat.agent.running import run_tool
from chat.agent.tools import ToolRegistry
from chat.conversations import selectors
from chat.servers.configured import configured_servers, mcp_limits
from chat.turns import deps
from chat.turns.policy import agent_policy

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
    if policy.asks_first(tool):
        raise AppCallRefused(
            _("“%(tool)s” asks first: ask for it in the conversation") % {"tool": tool.title}
        )
    call = PendingCall(0, f"{ORIGIN}-{uuid.uuid4().hex[:16]}", tool.name, json.dumps(arguments))
    # Write-ahead: the call is in the record before the server hears of it.
    written = ToolCall(tool=tool.name, call_id=call.call_id, arguments=arguments, origin=ORIGIN)
    await database_sync_to_async(feeds.append_late)(shown.feed_id, written)
    person = await database_sync_to_async(deps.person)(user)
    context = deps.current().tool_context(
        user=person, conversation_id=shown.conversation_id, language=policy.language
    )
    outcome = await run_tool(ToolRegistry.of([tool]), call, context, policy.tool_timeout)
    for line in (outcome.result, *outcome.lines):
        if isinstance(line, Status):
            line = replace(line, message=_("From the app: %(line)s") % {"line": line.message})
        await database_sync_to_async(feeds.append_late)(shown.feed_id, line)
    return _call_tool_result(outcome.result)


def _call_tool_result(result: ToolResult) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "content": [{"type": "text", "text": result.content if result.ok else result.summary}],
        "isError": not result.ok,
    }
    if result.structured is not None:
        answer["structuredContent"] = result.structured
    return answer
