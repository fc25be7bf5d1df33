"""Tool calls that ask first. The pause opens the wait (`open_wait`, with the pause's other
rows); a decision (approve, deny, a timeout, a Stop) is claimed once, whichever process, tab
or route it comes by, and recorded with its claim; then any process goes on with the turn
from what the pause stored (chat.agent.approval.Paused) and the claim's verdict
(chat.turns.resuming), since no task waits for it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.db import close_old_connections, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from activity.recording.events import Decision, ToolCall, decision_kind
from activity.recording.receipts import fingerprint_or_blank
from activity.writing import feeds
from chat.agent.approval import Paused, UnknownPause, Verdict
from chat.asks.receipts import NO_RECEIPT, Edits, Receipt, bound
from chat.conversations.refusals import TurnRejected
from chat.conversations.services import answer_resume
from chat.models import Message, ToolApproval

REASON_LIMIT = 500


class NoSuchApproval(TurnRejected):
    status = 404


class AlreadyDecided(TurnRejected):
    status = 409


class NewerPause(TurnRejected):
    """A pause stored by a newer release (a deploy under way): this process cannot go on with
    it, so it takes no decision and leaves the turn waiting for one that can."""

    status = 400


@dataclass(frozen=True, slots=True)
class Claimed:
    """A decision taken: the approval it decided (with its answer, now streaming again),
    the decision as recorded, and the pause to go on from."""

    approval: ToolApproval
    decision: Decision
    # None for an app's call (ToolApproval.app_of): no turn goes on from it.
    paused: Paused | None

    @property
    def verdict(self) -> Verdict:
        """The decision as the agent loop takes it, with what the model is told."""
        decision = self.decision
        if decision.decision == "approve":
            told = ""
        elif decision.decision == "deny":
            told = _("The user denied this call")
            if decision.reason:
                told = _("%(what)s: %(reason)s") % {"what": told, "reason": decision.reason}
        else:
            told = _("Nobody approved this call in time; it did not run")
        return Verdict(
            call_id=self.approval.call_id,
            approved=decision.approved,
            reason=told,
            fingerprint=decision.fingerprint,
            edited_arguments=decision.edited_arguments,
        )


def open_wait(
    *, answer: Message, paused: Paused, arguments: dict[str, Any], deadline_seconds: float
) -> ToolApproval:
    """The call `paused` waits on, for its owner to decide, in the pause's transaction
    (chat.turns.runner): its arguments as recorded, their fingerprint, and what the turn
    needs to go on."""
    call = paused.call
    return ToolApproval.objects.create(
        answer=answer,
        call_id=call["call_id"],
        tool=call["name"],
        title=paused.title[:80],
        arguments=arguments,
        fingerprint=fingerprint_or_blank(arguments),
        parameters=paused.parameters,
        state=paused.as_state(),
        deadline=timezone.now() + timedelta(seconds=deadline_seconds),
    )


def open_app_wait(
    *,
    answer_id: int,
    call: ToolCall,
    title: str,
    parameters: dict[str, Any] | None,
    app_of: str,
    server: str,
    server_tool: str,
    deadline_seconds: float,
) -> ToolApproval:
    """The call an app asked for (chat.turns.app_calls), for its owner to decide as the
    model's are: its turn ended, so the row keeps what runs it instead of a pause."""
    return ToolApproval.objects.create(
        answer_id=answer_id,
        call_id=call.call_id,
        tool=call.tool,
        title=title[:80],
        arguments=dict(call.arguments),
        fingerprint=fingerprint_or_blank(call.arguments),
        parameters=parameters,
        state={"server": server, "tool": server_tool},
        deadline=timezone.now() + timedelta(seconds=deadline_seconds),
        app_of=app_of,
    )


async def claim(
    *,
    conversation_id: uuid.UUID,
    call_id: str,
    user: Any,
    approve: bool,
    reason: str = "",
    edits: Edits | None = None,
    shown: str = "",
) -> Claimed:
    """The owner's decision on a waiting call; the caller has checked that `user` owns the
    conversation. The first decision wins; a later one is AlreadyDecided. An approval may
    come with `edits` (the arguments to run instead) and with the fingerprint its card
    `shown`: a card that no longer shows what would run decides nothing. A call whose wait
    ran out is claimed as timed out instead."""
    if not isinstance(reason, str):
        raise TurnRejected(_("The reason must be text."))
    kind = "approve" if approve else "deny"
    return await database_sync_to_async(_claim)(
        ToolApproval.objects.of_call(conversation_id, call_id),
        user,
        kind,
        " ".join(reason.split())[:REASON_LIMIT],
        Receipt(edits if approve else None, shown),
    )


async def claim_expired() -> list[Claimed]:
    """Denies as timed out every call whose wait passed GLASSBOX_APPROVAL_TIMEOUT."""
    claimed = []
    for approval_id in await database_sync_to_async(_expired)():
        try:
            claimed.append(
                await database_sync_to_async(_claim)(
                    ToolApproval.objects.filter(pk=approval_id), None, "timeout", ""
                )
            )
        except TurnRejected:
            continue  # another process got there first, or it is a newer release's
    return claimed


def _expired() -> list[int]:
    # A pass first closes the connection of its thread if a database restart left it
    # unusable, as a request does: the async ORM's reads never do, and the watch then failed
    # on the dead connection for as long as the process lived. (Channels' trip to the
    # thread does it too, but not under its test communicator.)
    close_old_connections()
    expired = ToolApproval.objects.waiting().filter(deadline__lte=timezone.now())
    return list(expired.values_list("pk", flat=True))


async def claim_stop(answer_id: int) -> Message | None:
    """Stop on a waiting turn: its call never runs; the answer to close as stopped, or None
    if it was not waiting."""
    updated = await ToolApproval.objects.filter(
        answer_id=answer_id, decision="", answer__state=Message.State.WAITING
    ).aupdate(decision=ToolApproval.Decision.STOPPED, decided_at=timezone.now())
    if not updated:
        return None
    return await Message.objects.select_related("feed").aget(pk=answer_id)


def _claim(
    found: QuerySet[ToolApproval], user: Any, kind: str, reason: str, asked: Receipt = NO_RECEIPT
) -> Claimed:
    """Decides the first approval `found` holds; its pause, read before anything is saved."""
    with transaction.atomic():
        approval = (
            # Only the approval's row is locked: PostgreSQL refuses FOR UPDATE on the nullable
            # side of the join to the feed.
            found.select_for_update(of=("self",)).select_related("answer__feed").first()
        )
        if approval is None:
            raise NoSuchApproval(_("No tool call of this conversation has that id."))
        turns_waiting = approval.answer.state == Message.State.WAITING
        if approval.decision or not (turns_waiting or approval.app_of):
            raise AlreadyDecided(_("That tool call was already decided."))
        paused = None if approval.app_of else _paused(approval)
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
        if paused is None:
            # An app's call: its answer ended and stays so; the decision closes the feed anew.
            decision = feeds.append_late(feed.pk, decided)
            assert isinstance(decision, Decision)
            return Claimed(approval, decision, None)
        # Running again: the conversation's one open turn stays this one. The answer's row
        # is locked before its feed's, in the order recovery locks them.
        answer_resume(answer_id=approval.answer_id)
        (decision,) = feeds.append(feed.pk, [decided], state="running", heartbeat_at=now).events
        assert isinstance(decision, Decision)
        # The resumed run numbers on from here (activity.writing.recorder).
        feed.seq_reserved = max(feed.seq_reserved, decision.seq or 0)
    approval.answer.state = Message.State.STREAMING
    return Claimed(approval, decision, paused)


def _paused(approval: ToolApproval) -> Paused:
    try:
        return Paused.from_state(approval.state)
    except UnknownPause:
        raise NewerPause(
            _(
                "This call was paused by a newer version of Glassbox than this server "
                "runs, so it cannot be decided here yet. Try again in a minute."
            )
        ) from None
