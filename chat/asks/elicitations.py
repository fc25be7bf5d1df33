"""An MCP server's question to the person whose turn runs its tool (elicitation): stored, shown
as a card to every socket of the conversation, answered once from any of them, and audited.

The call that asked waits in the process that runs the turn; the answer may come by another
process. It is written first (the first answer wins, checked against the form), then handed
to the waiting call in clear: at once when the turn runs in this process, through the
channel layer from another (the call looks at its row each second in case the layer lost
it). A value the form marks sensitive is stored only as its SHA-256. A question whose call,
turn or server session ends first ends as `ended`; past its deadline it is `expired` and
the server is told `cancel`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from activity.recording.chain import json_digest
from activity.recording.events import RecordedEvent, Status
from chat.agent.mcp.elicit_schema import WITHHELD, Field, Invalid, check_answer, kept, read_form
from chat.agent.questions import Question, Reply
from chat.agent.sampling import Invalid as InvalidEdits
from chat.agent.sampling import Refused, Sampled, SamplingRequest
from chat.conversations.refusals import TurnRejected
from chat.models import Conversation, Elicitation, Message
from project import groups

logger = logging.getLogger("glassbox.turns")

ICON = "❓"
SAMPLING_ICON = "🧠"
ANSWERED_ICON = "💬"
LINE_LIMIT = 200
# Waiting calls of this process, by question: an answer taken here reaches them directly,
# with its row as answered and the answer in clear.
Answered = tuple[Elicitation, dict[str, Any] | None]
_waiting: dict[uuid.UUID, asyncio.Future[Answered]] = {}


class NoSuchQuestion(TurnRejected):
    status = 404


class AlreadyAnswered(TurnRejected):
    status = 409


class BadAnswer(TurnRejected):
    """An answer that does not fit the form; `errors` says, per field, what is wrong."""

    status = 400

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(
            _("The answer does not fit the form: %(errors)s")
            % {"errors": "; ".join(f"{name}: {why}" for name, why in errors.items())}
        )
        self.errors = errors


def group_of(question_id: uuid.UUID) -> str:
    return f"elicitation-{question_id.hex}"


async def card_changed(question: Elicitation) -> None:
    """Every socket of the conversation shows the card as it is now (chat.socket)."""
    await groups.group_send(
        Conversation.group_name_for(question.answer.conversation_id),
        {"type": "elicitation.changed", "question_id": str(question.pk)},
    )


class TurnAsker:
    """The turn's side of a server's questions (chat.agent.questions.Asker): `emit` records
    and shows a feed line, as the runner does for the agent's own events."""

    def __init__(
        self,
        answer: Message,
        emit: Callable[[RecordedEvent], Awaitable[None]],
        model: Callable[[SamplingRequest], Awaitable[Sampled]] | None = None,
    ) -> None:
        self.answer = answer
        self.emit = emit
        # Runs an approved sampling request with the turn's provider and budget, and records
        # the call as the turn's (chat.turns.sampling); None: the turn cannot.
        self.model = model

    async def ask(self, question: Question) -> Reply:
        fields = read_form(question.schema) if question.mode == "form" else ()
        row = await self._asked(
            Elicitation(
                call_id=question.call_id[:64],
                server=question.server[:64],
                mode=question.mode,
                message=question.message,
                requested_schema=question.schema,
                url=question.url,
                server_elicitation_id=question.elicitation_id[:200],
            ),
            Status(
                icon=ICON,
                message=_line(
                    _("%(server)s asks: %(message)s — waiting for your answer")
                    % {"server": question.server, "message": question.message}
                ),
                state="in_progress",
                call_id=question.call_id,
            ),
        )
        row, clear = await self._answered(row)
        await self.emit(_answered_line(row, fields))
        if row.state == Elicitation.State.ACCEPTED and question.mode == "url":
            return Reply("accept")
        if row.state == Elicitation.State.ACCEPTED and clear is not None:
            return Reply("accept", clear)
        if row.state == Elicitation.State.ACCEPTED:
            # Answered in another process whose message was lost: the secret fields exist
            # only as hashes now, and a hash is not the answer.
            logger.warning("question %s: its answer's secret fields were lost", row.pk)
        if row.state == Elicitation.State.DECLINED:
            return Reply("decline")
        return Reply("cancel")

    async def sample(self, request: SamplingRequest) -> Sampled:
        """A server's request to use the model: a card the person approves (maybe edited)
        or denies, as a question is answered; approved, the model writes (`self.model`)."""
        if self.model is None:
            raise Refused(_("this turn cannot use the model"))
        last = request.messages[-1].text if request.messages else ""
        row = await self._asked(
            Elicitation(
                call_id=request.call_id[:64],
                server=request.server[:64],
                mode=Elicitation.Mode.SAMPLING,
                message=last,
                requested_schema=request.to_json(),
            ),
            Status(
                icon=SAMPLING_ICON,
                message=_line(
                    _("%(server)s asks to use the model — waiting for your approval")
                    % {"server": request.server}
                ),
                state="in_progress",
                call_id=request.call_id,
            ),
        )
        row, _clear = await self._answered(row)
        await self.emit(_answered_line(row, ()))
        if row.state != Elicitation.State.ACCEPTED or row.content is None:
            raise Refused(refused_because(row))
        approved = SamplingRequest.from_json(request.server, request.call_id, row.content)
        return await self.model(approved)

    async def _asked(self, row: Elicitation, line: Status) -> Elicitation:
        """Stores what waits, shows its line and its card on every socket of the owner."""
        row.answer = self.answer
        row.deadline = timezone.now() + timedelta(seconds=settings.GLASSBOX_ELICITATION_TIMEOUT)
        await database_sync_to_async(row.save)(force_insert=True)
        _waiting[row.pk] = asyncio.get_running_loop().create_future()
        try:
            await self.emit(line)
            await card_changed(row)
        except BaseException:
            _waiting.pop(row.pk, None)
            await _ended(row)
            raise
        return row

    async def _answered(self, row: Elicitation) -> Answered:
        """Waits for the answer (or the deadline); the row as answered, the answer in clear."""
        try:
            row, clear = await _answer_of(row, _waiting[row.pk])
            if row.state == Elicitation.State.EXPIRED:
                await card_changed(row)
        except BaseException:
            await _ended(row)
            raise
        finally:
            _waiting.pop(row.pk, None)
        return row, clear

    async def completed(self, server: str, elicitation_id: str) -> None:
        """The server says the URL-mode question was completed at its end."""
        rows = await database_sync_to_async(_complete)(self.answer, server, elicitation_id)
        for row in rows:
            await card_changed(row)


def _complete(answer: Message, server: str, elicitation_id: str) -> list[Elicitation]:
    rows = Elicitation.objects.filter(
        answer=answer, server=server, server_elicitation_id=elicitation_id, completed_at=None
    ).select_related("answer")
    found = list(rows)
    rows.update(completed_at=timezone.now())
    return found


async def _answer_of(row: Elicitation, arrived: asyncio.Future[Answered]) -> Answered:
    """Waits for the answer, from this process or another, or for the deadline (then the
    question expires). Returns the row as answered and the answer in clear."""
    async with groups.subscribe(group_of(row.pk)) as elsewhere:
        while True:
            left = (row.deadline - timezone.now()).total_seconds()
            if left <= 0:
                if await database_sync_to_async(_settle)(row.pk, Elicitation.State.EXPIRED):
                    return await _reread(row), None
                # Answered at the deadline: the answer stands.
                if arrived.done():
                    return arrived.result()
                current = await _reread(row)
                return current, _clear_content(current)
            from_layer = asyncio.ensure_future(elsewhere.get())
            either: set[asyncio.Future[Any]] = {arrived, from_layer}
            try:
                # FIRST_COMPLETED: by default `wait` waits for both, so an answer would
                # sit until the poll's timeout.
                await asyncio.wait(
                    either,
                    timeout=min(left, max(0.1, settings.GLASSBOX_QUESTION_POLL_SECONDS)),
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                from_layer.cancel()
            if arrived.done():
                return arrived.result()
            if from_layer.done() and not from_layer.cancelled() and not from_layer.exception():
                return await _reread(row), from_layer.result().get("content")
            current = await _reread(row)
            if current.state != Elicitation.State.WAITING:
                # Answered elsewhere and its message lost: what was stored is what is known.
                return current, _clear_content(current)


def _clear_content(row: Elicitation) -> dict[str, Any] | None:
    """The stored answer, unless part of it is only a hash (then nothing can be sent)."""
    if row.content is None:
        return None
    fields = read_form(row.requested_schema) if row.mode == "form" else ()
    return None if any(f.sensitive for f in fields if f.name in row.content) else row.content


async def _reread(row: Elicitation) -> Elicitation:
    fresh = await Elicitation.objects.select_related("answered_by").aget(pk=row.pk)
    fresh.answer = row.answer
    return fresh


def _settle(question_id: uuid.UUID, state: str, reason: str = "") -> bool:
    """Closes a waiting question without an answer; False if it was answered first."""
    return bool(
        Elicitation.objects.filter(pk=question_id, state=Elicitation.State.WAITING).update(
            state=state, reason=reason[:300], answered_at=timezone.now()
        )
    )


async def _ended(row: Elicitation) -> None:
    """The call was cancelled (Stop, its time limit, the session lost): nobody can answer
    now. Written whatever happens to the cancelled task next."""
    ending = asyncio.ensure_future(_end(row, _("The call ended before an answer.")))
    await asyncio.shield(ending)


async def _end(row: Elicitation, reason: str) -> None:
    with contextlib.suppress(Exception):
        if await database_sync_to_async(_settle)(row.pk, Elicitation.State.ENDED, reason):
            await card_changed(row)


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_LIMIT else text[: LINE_LIMIT - 1] + "…"


def _answered_line(row: Elicitation, fields: tuple[Field, ...]) -> Status:
    """The sealed line that says how the question ended, and who answered what."""
    return Status(
        icon=ANSWERED_ICON,
        message=_line(outcome_of(row, fields)),
        state="in_progress",
        call_id=row.call_id,
        question=str(row.pk),
        outcome=row.state,
        answer_sha256=json_digest(row.content),
    )


def outcome_of(row: Elicitation, fields: tuple[Field, ...]) -> str:
    """How a question ended, for people ("" while it waits)."""
    who = row.answered_by.get_username() if row.answered_by else ""
    if row.mode == Elicitation.Mode.SAMPLING:
        return _sampling_outcome(row, who)
    match row.state:
        case Elicitation.State.ACCEPTED:
            shown = shown_answer(row.content or {}, fields)
            if shown:
                return _("Answered by %(who)s: %(answer)s") % {"who": who, "answer": shown}
            return _("Accepted by %(who)s") % {"who": who}
        case Elicitation.State.DECLINED:
            return _("Declined by %(who)s") % {"who": who}
        case Elicitation.State.CANCELLED:
            return _("Cancelled by %(who)s") % {"who": who}
        case Elicitation.State.EXPIRED:
            return _("Not answered in time: the question was cancelled")
        case Elicitation.State.ENDED:
            return _("Cancelled: %(reason)s") % {"reason": row.reason}
    return ""


def _sampling_outcome(row: Elicitation, who: str) -> str:
    match row.state:
        case Elicitation.State.ACCEPTED if row.content != row.requested_schema:
            return _("Approved with edits by %(who)s") % {"who": who}
        case Elicitation.State.ACCEPTED:
            return _("Approved by %(who)s") % {"who": who}
        case Elicitation.State.DECLINED | Elicitation.State.CANCELLED:
            return _("Denied by %(who)s") % {"who": who}
        case Elicitation.State.EXPIRED:
            return _("Not approved in time: the request was refused")
        case Elicitation.State.ENDED:
            return _("Cancelled: %(reason)s") % {"reason": row.reason}
    return ""


def refused_because(row: Elicitation) -> str:
    """What the server is told of a sampling request that was not approved."""
    match row.state:
        case Elicitation.State.DECLINED | Elicitation.State.CANCELLED:
            return "The user denied the request"
        case Elicitation.State.EXPIRED:
            return "The user did not approve the request in time"
    return "The request was not approved"


def shown_answer(content: dict[str, Any], fields: tuple[Field, ...]) -> str:
    """An answer in one line, in the form's order (PostgreSQL's jsonb keeps no order), a
    sensitive value as "(withheld)"."""
    titles = {f.name: f for f in fields}
    order = [f.name for f in fields if f.name in content]
    parts = []
    for name in order + sorted(set(content) - set(order)):
        value, field = content[name], titles.get(name)
        if field is not None and field.sensitive:
            value = WITHHELD
        elif isinstance(value, bool):
            value = _("yes") if value else _("no")
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        parts.append(f"{field.title if field else name}: {value}")
    return "; ".join(parts)


async def answer(
    *,
    conversation_id: uuid.UUID,
    question_id: uuid.UUID,
    user: Any,
    action: str,
    values: dict[str, Any] | None = None,
) -> Elicitation:
    """The person's answer to a waiting question of their conversation; the caller checked
    that `user` may act on it. A bad answer raises BadAnswer and saves nothing."""
    if action not in ("accept", "decline", "cancel"):
        raise TurnRejected(_("Answer with accept, decline or cancel."))
    clear, row = await database_sync_to_async(_claim)(
        conversation_id, question_id, user, action, values or {}
    )
    waiting = _waiting.get(row.pk)
    if waiting is not None:
        # The page's form without JavaScript answers from another thread's loop.
        waiting.get_loop().call_soon_threadsafe(_deliver, waiting, (row, clear))
    else:
        await groups.group_send(
            group_of(row.pk), {"type": "elicitation.answered", "content": clear}
        )
    await card_changed(row)
    return row


def _deliver(waiting: asyncio.Future[Answered], answered: Answered) -> None:
    if not waiting.done():
        waiting.set_result(answered)


def _claim(
    conversation_id: uuid.UUID,
    question_id: uuid.UUID,
    user: Any,
    action: str,
    values: dict[str, Any],
) -> tuple[dict[str, Any] | None, Elicitation]:
    row = (
        Elicitation.objects.select_related("answer")
        .filter(pk=question_id, answer__conversation_id=conversation_id)
        .first()
    )
    if row is None:
        raise NoSuchQuestion(_("There is no such question in this conversation."))
    close_if_orphaned([row])
    if row.state != Elicitation.State.WAITING:
        raise AlreadyAnswered(_("This question was already answered or has ended."))
    if row.deadline <= timezone.now():
        raise AlreadyAnswered(_("This question waited too long and was cancelled."))
    clear: dict[str, Any] | None = None
    stored: dict[str, Any] | None = None
    if action == "accept" and row.mode == Elicitation.Mode.FORM:
        fields = read_form(row.requested_schema)
        try:
            clear = check_answer(fields, values)
        except Invalid as exc:
            raise BadAnswer(exc.errors) from None
        stored = kept(fields, clear)
    elif action == "accept" and row.mode == Elicitation.Mode.SAMPLING:
        asked = SamplingRequest.from_json(row.server, row.call_id, row.requested_schema)
        try:
            stored = clear = asked.edited(values).to_json()
        except InvalidEdits as exc:
            raise BadAnswer(exc.errors) from None
    claimed = Elicitation.objects.filter(pk=row.pk, state=Elicitation.State.WAITING).update(
        state=action, content=stored, answered_by=user, answered_at=timezone.now()
    )
    if not claimed:
        raise AlreadyAnswered(_("This question was already answered or has ended."))
    turn = row.answer
    row.refresh_from_db()
    # As read: the waiting call takes this row, and says who answered, in its event loop.
    row.answer, row.answered_by = turn, user
    return clear, row


def close_if_orphaned(rows: list[Elicitation]) -> None:
    """Questions whose turn is no longer running (its process died, it was stopped) can
    never reach their server: they end, with a line that says so."""
    for row in rows:
        if row.state == Elicitation.State.WAITING and row.answer.state != Message.State.STREAMING:
            row.state = Elicitation.State.ENDED
            row.reason = _("The server's session ended before an answer (the turn stopped).")
            row.answered_at = timezone.now()
            Elicitation.objects.filter(pk=row.pk, state=Elicitation.State.WAITING).update(
                state=row.state, reason=row.reason, answered_at=row.answered_at
            )


def open_questions(conversation_id: uuid.UUID) -> list[Elicitation]:
    """The conversation's questions still waiting (for a page that opens or reloads), after
    closing those that can no longer be answered."""
    rows = list(
        Elicitation.objects.select_related("answer")
        .filter(answer__conversation_id=conversation_id, state=Elicitation.State.WAITING)
        .order_by("asked_at")
    )
    close_if_orphaned(rows)
    return [row for row in rows if row.state == Elicitation.State.WAITING]
