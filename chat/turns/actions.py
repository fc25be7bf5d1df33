"""What a page may ask of its conversation, whichever way it asks: the socket's JSON message
and the no-JavaScript form's POST carry the same fields, read here into one request and
carried out here through the turn pipeline (one mapping, two transports)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from chat import turns
from chat.models import Conversation

# Besides the fields below: htmx's ws-send adds HEADERS to every form message, and a form
# posted without JavaScript carries its CSRF token.
FIELDS = {"message", "client_id", "stop", "resume", "approve", "deny", "reason", "regenerate"}
CARRIED = {"HEADERS", "csrfmiddlewaretoken"}
CALL_ID_LIMIT = 64
# A page shows at most this many turns at once that may still be running.
RESUME_LIMIT = 20


class Unreadable(ValueError):
    """A request that is not one a page can make; the text says why."""


@dataclass(frozen=True, slots=True)
class Ask:
    text: Any
    client_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    answer_id: int


@dataclass(frozen=True, slots=True)
class Resume:
    """Show these answers live if they are still running (the socket only)."""

    answer_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Regenerate:
    answer_id: int


@dataclass(frozen=True, slots=True)
class Decide:
    call_id: str
    approve: bool
    reason: str = ""


Request = Ask | Stop | Resume | Decide | Regenerate


def read(data: Mapping[str, Any]) -> Request:
    """The request these fields make; a field no page sends is refused."""
    unknown = set(data) - FIELDS - CARRIED
    if unknown:
        raise Unreadable(_("Unknown field: %(field)s.") % {"field": sorted(unknown)[0]})
    if "stop" in data:
        try:
            return Stop(_answer_id(data["stop"]))
        except (TypeError, ValueError):
            raise Unreadable(_("Stop needs the id of the answer to stop.")) from None
    if "regenerate" in data:
        try:
            return Regenerate(_answer_id(data["regenerate"]))
        except (TypeError, ValueError):
            raise Unreadable(_("Regenerate needs the id of the answer.")) from None
    if "approve" in data or "deny" in data:
        approve = "approve" in data
        call_id = data["approve" if approve else "deny"]
        if approve and "deny" in data:
            raise Unreadable(_("Approve or deny, not both."))
        if not isinstance(call_id, str) or not 0 < len(call_id) <= CALL_ID_LIMIT:
            raise Unreadable(_("Approve and deny need the id of the tool call."))
        reason = data.get("reason", "")
        if not isinstance(reason, str):
            raise Unreadable(_("The reason must be text."))
        return Decide(call_id=call_id, approve=approve, reason=reason)
    if "resume" in data:
        ids = data["resume"]
        if not isinstance(ids, list) or len(ids) > RESUME_LIMIT:
            raise Unreadable(_("Resume needs a list of answer ids."))
        try:
            return Resume(tuple(_answer_id(answer_id) for answer_id in ids))
        except (TypeError, ValueError):
            raise Unreadable(_("Resume needs a list of answer ids.")) from None
    client_id = None
    if data.get("client_id"):
        try:
            client_id = uuid.UUID(str(data["client_id"]))
        except ValueError:
            raise Unreadable(_("client_id must be a UUID.")) from None
    return Ask(text=data.get("message"), client_id=client_id)


def _answer_id(value: object) -> int:
    """An id a database key can hold (64 bits); anything else is a ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(value)
    if isinstance(value, str) and not (value.isascii() and value.strip().isdigit()):
        raise ValueError(value)  # int() would take "²" or "1_000"
    number = int(value)
    if not 0 < number < 2**63:
        raise ValueError(value)
    return number


async def perform(
    request: Stop | Regenerate | Decide | Ask,
    *,
    conversation: Conversation,
    user: Any,
    language: str,
    guard: Callable[[], None] | None = None,
) -> turns.StartedTurn | None:
    """Carries out one request through the turn pipeline; a refusal raises TurnRejected.
    Returns the turn a question or a regeneration started. A question is admitted only if
    `guard` (run in the admission's database trip) does not raise."""
    match request:
        case Stop(answer_id=answer_id):
            if not await turns.stop(conversation_id=conversation.pk, answer_id=answer_id):
                raise turns.TurnRejected(_("That answer is not running any more."))
        case Regenerate(answer_id=answer_id):
            started = await turns.regenerate(
                conversation=conversation, answer_id=answer_id, language=language
            )
            return started
        case Decide():
            await turns.decide(
                conversation_id=conversation.pk,
                call_id=request.call_id,
                user=user,
                approve=request.approve,
                reason=request.reason,
            )
        case Ask():
            started = await turns.begin(
                conversation=conversation,
                text=request.text,
                client_id=request.client_id,
                language=language,
                guard=guard,
            )
            return started
    return None
