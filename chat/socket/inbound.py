"""What a socket accepts from its page: the shape of each message, and how many."""

from __future__ import annotations

import json
import time
import uuid
from collections import deque
from dataclasses import dataclass

from django.utils.translation import gettext as _

# htmx's ws-send adds HEADERS to every form message.
ALLOWED_KEYS = {
    "message", "client_id", "stop", "resume", "approve", "deny", "reason", "regenerate", "HEADERS",
    # The page's forms also work without JavaScript (a POST), so they carry a CSRF token.
    "csrfmiddlewaretoken",
}  # fmt: skip
CALL_ID_LIMIT = 64
# A page shows at most this many turns at once that may still be running.
RESUME_LIMIT = 20
FLOOD_LIMIT = 20
FLOOD_WINDOW = 10.0


class Unreadable(ValueError):
    """A message that is not one the socket understands; the text says why."""


@dataclass(frozen=True, slots=True)
class Ask:
    # Cleaned when the turn is admitted, so every route checks a question the same way.
    text: object
    client_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    answer_id: int


@dataclass(frozen=True, slots=True)
class Resume:
    """The answers a (re)connected page still shows as running: it learns how each stands."""

    answer_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Regenerate:
    """A new answer in place of the last one."""

    answer_id: int


@dataclass(frozen=True, slots=True)
class Decide:
    """Approve or deny a tool call that waits for this conversation's owner."""

    call_id: str
    approve: bool
    reason: str = ""


Request = Ask | Stop | Resume | Decide | Regenerate


def parse(text_data: str | None) -> Request:
    if text_data is None:
        raise Unreadable(_("Send your question as text."))
    try:
        data = json.loads(text_data)
    except ValueError:
        raise Unreadable(_("That message could not be read (it was not JSON).")) from None
    if not isinstance(data, dict):
        raise Unreadable(_("That message could not be read (expected a JSON object)."))
    unknown = set(data) - ALLOWED_KEYS
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
    number = int(value)
    if not 0 < number < 2**63:
        raise ValueError(value)
    return number


class FloodGuard:
    """More than FLOOD_LIMIT messages in FLOOD_WINDOW seconds is a flood."""

    def __init__(self) -> None:
        self.recent: deque[float] = deque()

    def flooded(self) -> bool:
        now = time.monotonic()
        self.recent.append(now)
        while self.recent and self.recent[0] < now - FLOOD_WINDOW:
            self.recent.popleft()
        return len(self.recent) > FLOOD_LIMIT
