"""A paused turn goes on: from an owner's decision, from a wait that ran out (one watch per
process keeps the deadlines), or ends at a Stop. What waits and its claim are chat.asks's;
going on is the pipeline's, in whichever process the decision arrives, since no task waits
for a paused turn."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
import weakref
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from activity.recording.events import Decision
from chat.asks import approvals
from chat.asks.receipts import Edits
from chat.turns import app_calls, registry, runner

logger = logging.getLogger("glassbox.turns")


async def decide(
    *,
    conversation_id: uuid.UUID,
    call_id: str,
    user: Any,
    approve: bool,
    reason: str = "",
    edits: Edits | None = None,
    shown: str = "",
) -> Decision:
    """The owner's decision on a waiting call (chat.asks.approvals.claim), and the turn goes
    on from it; a call whose wait ran out goes on denied and the decision is refused."""
    claimed = await approvals.claim(
        conversation_id=conversation_id,
        call_id=call_id,
        user=user,
        approve=approve,
        reason=reason,
        edits=edits,
        shown=shown,
    )
    _go_on(claimed)
    if claimed.decision.decision == "timeout":
        raise approvals.AlreadyDecided(_("This call waited too long and was denied as timed out."))
    return claimed.decision


async def settle_expired() -> int:
    """Every call whose wait ran out goes on denied as timed out; how many."""
    claimed = await approvals.claim_expired()
    for each in claimed:
        _go_on(each)
    return len(claimed)


async def stop_waiting(answer_id: int) -> bool:
    """Stop on a waiting turn: it ends as stopped, and its call never runs."""
    answer = await approvals.claim_stop(answer_id)
    if answer is None:
        return False
    await runner.close_paused(answer)
    return True


def _go_on(claimed: approvals.Claimed) -> None:
    if claimed.paused is None:
        app_calls.launch_decided(claimed)
        return
    registry.launch(
        claimed.approval.answer_id,
        runner.run(
            answer=claimed.approval.answer,
            resume=claimed.paused,
            verdict=claimed.verdict,
            decided=claimed.decision,
        ),
    )


_watchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task] = (
    weakref.WeakKeyDictionary()
)


def watch() -> None:
    """Keeps one task per process that denies calls whose wait ran out; started by the first
    turn or socket, so a process that serves anything also keeps the deadlines."""
    loop = asyncio.get_running_loop()
    task = _watchers.get(loop)
    if task is None or task.done():
        # A context of its own, as a turn's: the watch outlives whoever started it, and must
        # not inherit their context (asgiref's executor of a request thread that is gone).
        _watchers[loop] = loop.create_task(
            _watch(), name="approvals", context=contextvars.Context()
        )


async def _watch() -> None:
    while True:
        await asyncio.sleep(min(30.0, max(settings.GLASSBOX_APPROVAL_TIMEOUT / 4, 0.2)))
        try:
            await settle_expired()
        except Exception:  # a database hiccup must not end the watch
            logger.warning("could not settle approval timeouts", exc_info=True)
