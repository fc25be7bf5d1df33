"""An approved call, just before it runs: it runs only as approved. What is about to run is
fingerprinted again (activity.recording.receipts) and compared with the fingerprint the
owner approved; a call approved with edits runs with the edited arguments, and the model is
told what the owner changed."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from django.utils.translation import gettext as _

from activity.recording.events import Status, ToolResult
from activity.recording.receipts import NotFingerprintable, fingerprint
from chat.agent.approval import Verdict
from chat.agent.calls import PendingCall, raw_arguments
from chat.agent.lines import fallback
from chat.agent.outcome import CallOutcome
from chat.agent.tools import FEEDBACK_ARG


def to_run(call: PendingCall, verdict: Verdict) -> PendingCall | None:
    """The call as approved (its arguments the edited ones, if the owner changed them), or
    None when what would run is not what the owner approved."""
    arguments = (
        verdict.edited_arguments
        if verdict.edited_arguments is not None
        else raw_arguments(call.arguments)
    )
    if verdict.fingerprint:
        try:
            if fingerprint(arguments) != verdict.fingerprint:
                return None
        except NotFingerprintable:
            return None
    if verdict.edited_arguments is None:
        return call
    return replace(call, arguments=json.dumps(verdict.edited_arguments, ensure_ascii=False))


def not_as_approved(call: PendingCall) -> CallOutcome:
    """The call differs from what the owner approved: it does not run, and the feed says why."""
    reason = _("its arguments are not the ones you approved, so it did not run")
    content = json.dumps({"error": reason}, ensure_ascii=False)
    result = ToolResult(
        call_id=call.call_id, ok=False, summary=reason, duration_ms=0, tool=call.name,
        content=content,
    )  # fmt: skip
    failed = Status(
        icon="❌",
        message=_("%(tool)s not run: %(reason)s") % {"tool": call.name, "reason": reason},
        state="failed",
        tool=call.name,
        call_id=call.call_id,
    )
    return CallOutcome(result, (failed, fallback(call.call_id, _("Answering without it"))))


def changes(asked: dict[str, Any], edited: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What the owner changed, argument by argument: {"to": {"asked": …, "approved": …}}."""
    names = [n for n in (*asked, *(n for n in edited if n not in asked)) if n != FEEDBACK_ARG]
    return {
        name: {"asked": asked.get(name), "approved": edited.get(name)}
        for name in names
        if asked.get(name) != edited.get(name)
    }


def told_of_edits(content: str, asked: dict[str, Any], edited: dict[str, Any] | None) -> str:
    """The tool's result as the model reads it, saying what the owner changed first: the
    model must not believe its own arguments ran."""
    if edited is None or not (changed := changes(asked, edited)):
        return content
    note = {
        "note": "The user changed these arguments before approving; the tool ran with theirs.",
        "changed_by_user": changed,
    }
    try:
        result = json.loads(content)
    except ValueError:
        result = content
    # A result object keeps its own fields beside the note; any other result goes under it.
    told = note | result if isinstance(result, dict) else note | {"result": result}
    return json.dumps(told, ensure_ascii=False)
