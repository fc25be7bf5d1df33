"""Tool calls that ask first. A decision (approve, deny, a timeout, a Stop) is taken once,
whichever process, tab or route it comes by; then any process goes on with the turn from
what the pause stored (chat.agent.approval.Paused), since no task waits for it."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
import weakref
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from activity.recording import feeds
from activity.recording.events import Decision, decision_kind
from chat.agent.approval import Paused, UnknownPause, Verdict
from chat.asks.receipts import NO_RECEIPT, Edits, Receipt, bound
from chat.conversations.services import answer_resume
from chat.models import Message, ToolApproval
from chat.turns import registry, runner
from chat.turns.admission import TurnRejected

logger = logging.getLogger("glassbox.turns")
REASON_LIMIT = 500


class NoSuchApproval(TurnRejected):
    status = 404


class AlreadyDecided(TurnRejected):
    status = 409


class NewerPause(TurnRejected):
    """A pause stored by a newer release (a deploy under way): this process cannot go on with
    it, so it takes no decision and leaves the turn waiting for one that can."""

    status = 400


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
    """The owner's decision on a waiting call; the caller has checked that `user` owns the
    conversation. The first decision wins; a later one is AlreadyDecided. An approval may
    come with `edits` (the arguments to run instead) and with the fingerprint its card
    `shown`: a card that no longer shows what would run decides nothing."""
    if not isinstance(reason, str):
        raise TurnRejected(_("The reason must be text."))
    kind = "approve" if approve else "deny"
    claimed = await database_sync_to_async(_claim)(
        ToolApproval.objects.of_call(conversation_id, call_id),
        user,
        kind,
        " ".join(reason.split())[:REASON_LIMIT],
        Receipt(edits if approve else None, shown),
    )
    approval, decision, paused = claimed
    _go_on(approval, decision, paused)
    if decision.decision == "timeout":
        raise AlreadyDecided(_("This call waited too long and was denied as timed out."))
    return decision


async def settle_expired() -> int:
    """Denies as timed out every call whose wait passed GLASSBOX_APPROVAL_TIMEOUT."""
    settled = 0
    for approval_id in await database_sync_to_async(_expired)():
        try:
            claimed = await database_sync_to_async(_claim)(
                ToolApproval.objects.filter(pk=approval_id), None, "timeout", ""
            )
        except TurnRejected:
            continue  # another process got there first
        _go_on(*claimed)
        settled += 1
    return settled


def _expired() -> list[int]:
    # A pass first closes the connection of its thread if a database restart left it
    # unusable, as a request does: the async ORM's reads never do, and the watch then failed
    # on the dead connection for as long as the process lived. (Channels' trip to the
    # thread does it too, but not under its test communicator.)
    close_old_connections()
    expired = ToolApproval.objects.filter(
        decision="", deadline__lte=timezone.now(), answer__state=Message.State.WAITING
    )
    return list(expired.values_list("pk", flat=True))


async def stop_waiting(answer_id: int) -> bool:
    """Stop on a waiting turn: it ends as stopped, and its call never runs."""
    updated = await ToolApproval.objects.filter(
        answer_id=answer_id, decision="", answer__state=Message.State.WAITING
    ).aupdate(decision=ToolApproval.Decision.STOPPED, decided_at=timezone.now())
    if not updated:
        return False
    answer = await Message.objects.select_related("feed").aget(pk=answer_id)
    await runner.close_paused(answer)
    return True


def _claim(
    found: QuerySet[ToolApproval], user: Any, kind: str, reason: str, asked: Receipt = NO_RECEIPT
) -> tuple[ToolApproval, Decision, Paused]:
    """Decides the first approval `found` holds; its pause, read before anything is saved."""
    with transaction.atomic():
        approval = (
            # Only the approval's row is locked: PostgreSQL refuses FOR UPDATE on the nullable
            # side of the join to the feed.
            found.select_for_update(of=("self",)).select_related("answer__feed").first()
        )
        if approval is None:
            raise NoSuchApproval(_("No tool call of this conversation has that id."))
        if approval.decision or approval.answer.state != Message.State.WAITING:
            raise AlreadyDecided(_("That tool call was already decided."))
        try:
            paused = Paused.from_state(approval.state)
        except UnknownPause:
            raise NewerPause(
                _(
                    "This call was paused by a newer version of Glassbox than this server "
                    "runs, so it cannot be decided here yet. Try again in a minute."
                )
            ) from None
        now = timezone.now()
        if approval.deadline <= now:
            kind, user, reason, asked = "timeout", None, "", NO_RECEIPT
        receipt = bound(approval, asked)  # refuses before anything is saved
        approval.decision, approval.decided_at, approval.reason = kind, now, reason
        approval.decided_by = user if user is not None and user.is_authenticated else None
        approval.edited_arguments = receipt.edited_arguments
        approval.save(
            update_fields=["decision", "decided_at", "reason", "decided_by", "edited_arguments"]
        )
        feed = approval.answer.answer_feed
        # The decision is recorded with its claim, numbered after the pause's last line (a
        # paused turn has nothing unwritten): whoever asked gets its seq, and a process that
        # dies before the turn goes on still leaves it in the audit.
        decided = Decision(
            call_id=approval.call_id,
            tool=approval.tool,
            decision=decision_kind(kind),
            by=approval.decided_by.get_username() if approval.decided_by else "",
            reason=reason,
            waited_ms=int((now - approval.asked_at).total_seconds() * 1000),
            fingerprint=receipt.fingerprint,
            edited_arguments=receipt.edited_arguments,
        )
        # Running again: the conversation's one open turn stays this one. The answer's row
        # is locked before its feed's, in the order recovery locks them.
        answer_resume(answer_id=approval.answer_id)
        (decision,) = feeds.append(feed.pk, [decided], state="running", heartbeat_at=now).events
        assert isinstance(decision, Decision)
        # The resumed run numbers on from here (activity.recording.recorder).
        feed.seq_reserved = max(feed.seq_reserved, decision.seq or 0)
    approval.answer.state = Message.State.STREAMING
    return approval, decision, paused


def _go_on(approval: ToolApproval, decision: Decision, paused: Paused) -> None:
    if decision.decision == "approve":
        told = ""
    elif decision.decision == "deny":
        told = _("The user denied this call")
        if decision.reason:
            told = _("%(what)s: %(reason)s") % {"what": told, "reason": decision.reason}
    else:
        told = _("Nobody approved this call in time; it did not run")
    verdict = Verdict(
        call_id=approval.call_id,
        approved=decision.approved,
        reason=told,
        fingerprint=decision.fingerprint,
        edited_arguments=decision.edited_arguments,
    )
    registry.launch(
        approval.answer_id,
        runner.run(
            answer=approval.answer,
            resume=paused,
            verdict=verdict,
            decided=decision,
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
