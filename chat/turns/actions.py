"""What may be asked of a conversation, whichever way it is asked: the socket's JSON message,
the no-JavaScript form's POST and the REST API's JSON bodies are read here into one request,
with the same refusals in the same words, and carried out here through the turn pipeline
(one mapping, three transports). The API names two things its own way (`content` for the
question, `decision` for approve or deny); its bodies are read as the page's fields."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from activity.recording.events import SCORE_NOTE_LIMIT, Decision, ScoreValue, score_value
from chat import turns
from chat.asks import elicitations
from chat.asks.answers import AnswerQuestion, Decide
from chat.asks.approvals import REASON_LIMIT
from chat.asks.receipts import ARGUMENT_FIELD, Edits
from chat.models import Conversation
from project.text_rules import unstorable

# Each request is named by one field; the fields after it may come with it.
REQUESTS: dict[str, frozenset[str]] = {
    "message": frozenset({"client_id"}),
    "stop": frozenset(),
    "regenerate": frozenset(),
    "resume": frozenset(),
    "approve": frozenset({"reason", "edited_arguments", "fingerprint"}),
    "deny": frozenset({"reason", "fingerprint"}),
}
FIELDS = {
    "message", "client_id", "stop", "resume", "approve", "deny", "reason", "regenerate",
    "edited_arguments", "fingerprint",
}  # fmt: skip
# Besides those, an approval's edit form sends one field per argument (ARGUMENT_FIELD + name).
EDITED_LIMIT = 64
# Besides those: htmx's ws-send adds HEADERS to every form message, and a form posted without
# JavaScript carries its CSRF token.
CARRIED = {"HEADERS", "csrfmiddlewaretoken"}
CALL_ID_LIMIT = 64
# A page shows at most this many turns at once that may still be running.
RESUME_LIMIT = 20
# No request needs more than two levels (an object holding a list); the JSON decoder
# recurses once per level and fails with a RecursionError some thousand levels down, so
# deeper text is refused before it is decoded.
DEPTH_LIMIT = 8
# The REST API's bodies, by endpoint: each of its fields and the page's field it is.
QUESTION_BODY = {"content": "message", "client_id": "client_id"}
DECISION_BODY = {
    "decision": "decision", "reason": "reason", "edited_arguments": "edited_arguments",
    "fingerprint": "fingerprint",
}  # fmt: skip
DECISIONS = ("approve", "deny")


class Unreadable(ValueError):
    """A request that is not one a page or a program can make; the text says why, and
    `field` names the field at fault, if one is."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


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
class Rate:
    """A rating of an answer ("" call_id) or of one of its tool calls, by the asker."""

    rating: ScoreValue
    note: str = ""
    call_id: str = ""


RATING_BODY = {"rating", "note", "call_id"}


Request = Ask | Stop | Resume | Decide | Regenerate | AnswerQuestion
# An answer's form values come as `answer.<field>` (a page's form) or as one `answer`
# object (a program); their own checks are the form's (chat.agent.mcp.elicit_schema).
ANSWER_PREFIX = "answer."


def decode(data: str | bytes, encoding: str = "utf-8") -> object:
    """JSON as every transport reads it: nesting deeper than DEPTH_LIMIT, and NaN or
    Infinity (not JSON), are refused."""
    try:
        text = data.decode(encoding) if isinstance(data, bytes) else data
        if _deeper_than(text, DEPTH_LIMIT):
            raise Unreadable(
                _("That message could not be read (nested more than %(limit)s levels deep).")
                % {"limit": DEPTH_LIMIT}
            )
        return json.loads(text, parse_constant=_not_json)
    except Unreadable:
        raise
    except ValueError:  # a UnicodeDecodeError or a JSONDecodeError
        raise Unreadable(_("That message could not be read (it was not JSON).")) from None


def _not_json(constant: str) -> object:
    raise ValueError(constant)


# A string (brackets inside it do not count), or a bracket.
_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]', re.DOTALL)


def _deeper_than(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:
        return False  # the usual case, scanned in C
    depth = 0
    for token in _TOKENS.finditer(text):
        bracket = token[0]
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        elif bracket in "]}":
            depth -= 1
    return False


def fields_of(data: object, known: Mapping[str, str] | set[str]) -> dict[str, Any]:
    """The fields of a request that must be an object holding only `known` ones."""
    if not isinstance(data, Mapping):
        raise Unreadable(_("That message could not be read (expected a JSON object)."))
    unknown = set(data) - set(known)
    if unknown:
        # Named in the text only: `field` is for the fields a request may have.
        raise Unreadable(_("Unknown field: %(field)s.") % {"field": sorted(unknown)[0]})
    return dict(data)


def read(data: object) -> Request:
    """The request a page's fields make: one request at a time, and a field no page sends
    is refused."""
    if isinstance(data, Mapping) and "elicitation" in data:
        return read_answer(data)
    form_edits = _argument_fields(data)
    if form_edits:
        assert isinstance(data, Mapping)  # _argument_fields found some
        data = {k: v for k, v in data.items() if not k.startswith(ARGUMENT_FIELD)}
    data = fields_of(data, FIELDS | CARRIED)
    _one_request(data)
    if form_edits and "approve" not in data:
        raise Unreadable(_("Only an approval can change the call's arguments."))
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
        if not isinstance(call_id, str) or not 0 < len(call_id) <= CALL_ID_LIMIT:
            raise Unreadable(
                _("Approve and deny need the id of the tool call."),
                field="approve" if approve else "deny",
            )
        _storable(call_id, "approve" if approve else "deny")
        reason = data.get("reason", "")
        if not isinstance(reason, str):
            raise Unreadable(_("The reason must be text."), field="reason")
        _storable(reason, "reason")
        if len(reason) > REASON_LIMIT:
            raise Unreadable(
                _("The reason is at most %(limit)s characters long.") % {"limit": REASON_LIMIT},
                field="reason",
            )
        return Decide(
            call_id=call_id,
            approve=approve,
            reason=reason,
            edits=_edits(data.get("edited_arguments"), form_edits),
            fingerprint=_fingerprint(data.get("fingerprint", "")),
        )
    if "resume" in data:
        ids = data["resume"]
        if not isinstance(ids, list) or len(ids) > RESUME_LIMIT:
            raise Unreadable(_("Resume needs a list of answer ids."))
        try:
            return Resume(tuple(_answer_id(answer_id) for answer_id in ids))
        except (TypeError, ValueError):
            raise Unreadable(_("Resume needs a list of answer ids.")) from None
    client_id = None
    if "client_id" in data:
        try:
            client_id = uuid.UUID(data["client_id"])
        except (TypeError, ValueError, AttributeError):
            raise Unreadable(_("client_id must be a UUID."), field="client_id") from None
    # The question's own checks (text, length, storable) are the admission's, for all.
    return Ask(text=data.get("message", ""), client_id=client_id)


def read_posted(form: Mapping[str, Any]) -> Request:
    """The request a page's form makes without JavaScript (a QueryDict: one value a field,
    the last, as the socket's JSON has it)."""
    return read({key: form.get(key) for key in form})


def read_answer(data: Mapping[str, Any]) -> AnswerQuestion:
    """An answer to a server's question: its id, accept / decline / cancel, the values."""
    values = data.get("answer", {})
    if not isinstance(values, dict):
        raise Unreadable(_("The answer must be an object of the form's fields."), field="answer")
    values = dict(values)
    for name, value in data.items():
        if name.startswith(ANSWER_PREFIX):
            values[name.removeprefix(ANSWER_PREFIX)] = value
        elif name not in {"elicitation", "action", "answer", *CARRIED}:
            raise Unreadable(_("Unknown field: %(field)s.") % {"field": name})
    try:
        question_id = uuid.UUID(str(data["elicitation"]))
    except ValueError:
        raise Unreadable(
            _("An answer needs the id of its question."), field="elicitation"
        ) from None
    action = data.get("action", "accept")
    if action not in ("accept", "decline", "cancel"):
        raise Unreadable(_("Answer with accept, decline or cancel."), field="action")
    _storable(values, "answer")
    return AnswerQuestion(question_id=question_id, action=action, values=values)


def _storable(value: object, field: str) -> None:
    """Text a database cannot store, anywhere in a value (its keys too), is refused here,
    before any check of its form or schema and before it reaches a database: PostgreSQL
    fails on a NUL, SQLite keeps it and hands it on."""
    for text in _texts(value):
        if problem := unstorable(text):
            raise Unreadable(problem, field=field)


def _texts(value: object) -> Iterator[str]:
    # A loop, not recursion: the depth is DEPTH_LIMIT's for JSON, but not for every caller.
    left = [value]
    while left:
        item = left.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            left.extend(item.keys())
            left.extend(item.values())
        elif isinstance(item, list | tuple):
            left.extend(item)


def _argument_fields(data: object) -> dict[str, Any]:
    """The edit form's fields (`argument.to`: "…"), by argument name."""
    if not isinstance(data, Mapping):
        return {}
    found = {
        key.removeprefix(ARGUMENT_FIELD): value
        for key, value in data.items()
        if isinstance(key, str) and key.startswith(ARGUMENT_FIELD)
    }
    if len(found) > EDITED_LIMIT:
        raise Unreadable(_("Too many edited arguments."), field="edited_arguments")
    return found


def _edits(edited: object, form_edits: dict[str, Any]) -> Edits | None:
    if edited is not None and form_edits:
        raise Unreadable(
            _("Send the edited arguments as one object or as form fields, not both."),
            field="edited_arguments",
        )
    if form_edits:
        _storable(form_edits, "edited_arguments")
        return Edits(form_edits, from_form=True)
    if edited is None:
        return None
    if not isinstance(edited, Mapping):
        raise Unreadable(
            _("The edited arguments must be a JSON object."), field="edited_arguments"
        )
    _storable(edited, "edited_arguments")
    return Edits(dict(edited))


def _fingerprint(value: object) -> str:
    if not isinstance(value, str) or len(value) > 80:
        raise Unreadable(_("The fingerprint must be the text a card shows."), field="fingerprint")
    return value


def _one_request(data: Mapping[str, Any]) -> None:
    """Two requests in one are refused, not half carried out: a decision with a question
    would decide and drop the question."""
    named = [name for name in REQUESTS if name in data]
    if set(named) == {"approve", "deny"}:
        raise Unreadable(_("Approve or deny, not both."))
    if len(named) > 1:
        together = named[:2]
    elif named:
        stray = (set(data) & FIELDS) - {named[0], *REQUESTS[named[0]]}
        together = [named[0], *sorted(stray)[:1]]
    else:
        return  # a question without its text: the admission says so
    if len(together) == 2:
        raise Unreadable(
            _("Send one request at a time: “%(first)s” and “%(second)s” cannot go together.")
            % {"first": together[0], "second": together[1]}
        )


def read_question(body: object) -> Ask:
    """A question by the REST API (`POST …/messages/`)."""
    fields = fields_of(body, QUESTION_BODY)
    request = _read_as(QUESTION_BODY, {QUESTION_BODY[name]: fields[name] for name in fields})
    assert isinstance(request, Ask)  # its only fields name no other request
    return request


def read_decision(body: object, *, call_id: str) -> Decide:
    """A decision by the REST API (`POST …/approvals/<call_id>/`)."""
    fields = fields_of(body, DECISION_BODY)
    decision = fields.pop("decision", None)
    if decision not in DECISIONS:
        raise Unreadable(_("The decision must be approve or deny."), field="decision")
    names = {"call_id": decision, "reason": "reason", "edited_arguments": "edited_arguments"}
    request = _read_as(names | {"fingerprint": "fingerprint"}, {decision: call_id, **fields})
    assert isinstance(request, Decide)
    return request


def read_rating(body: object) -> Rate:
    """A rating, by the REST API (`POST …/messages/<id>/feedback/`) or a page's form."""
    fields = fields_of(body, RATING_BODY)
    rating = fields.get("rating")
    if rating not in ("up", "down"):
        raise Unreadable(_("The rating must be up or down."), field="rating")
    note = fields.get("note", "")
    if not isinstance(note, str):
        raise Unreadable(_("The note must be text."), field="note")
    _storable(note, "note")
    if len(note) > SCORE_NOTE_LIMIT:
        raise Unreadable(
            _("The note is at most %(limit)s characters long.") % {"limit": SCORE_NOTE_LIMIT},
            field="note",
        )
    call_id = fields.get("call_id", "")
    if not isinstance(call_id, str) or len(call_id) > CALL_ID_LIMIT:
        raise Unreadable(
            _("call_id must be the id of one of the answer's tool calls."), field="call_id"
        )
    _storable(call_id, "call_id")
    return Rate(rating=score_value(rating), note=note, call_id=call_id)


def read_posted_rating(form: Mapping[str, Any]) -> Rate:
    """A rating as a page's form posts it without JavaScript (an empty note or call_id is
    none)."""
    return read_rating({key: form.get(key) for key in form if key not in CARRIED})


def _read_as(names: Mapping[str, str], fields: dict[str, Any]) -> Request:
    """`read`, its refusals naming the API's fields (`names`: the API's name → the page's)."""
    try:
        return read(fields)
    except Unreadable as problem:
        ours = {page: api for api, page in names.items()}
        raise Unreadable(str(problem), field=ours.get(problem.field or "")) from None


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
    request: Stop | Regenerate | Decide | Ask | AnswerQuestion,
    *,
    conversation: Conversation,
    user: Any,
    language: str | None,
    guard: Callable[[], None] | None = None,
) -> turns.StartedTurn | Decision | None:
    """Carries out one request through the turn pipeline; a refusal raises TurnRejected.
    Returns the turn a question or a regeneration started (or a question's `client_id`
    joined), or the decision taken. A question is admitted only if `guard` (run in the
    admission's database trip) does not raise."""
    match request:
        case Stop(answer_id=answer_id):
            if not await turns.stop(conversation_id=conversation.pk, answer_id=answer_id):
                raise turns.TurnRejected(_("That answer is not running any more."))
        case Regenerate(answer_id=answer_id):
            return await turns.regenerate(
                conversation=conversation, answer_id=answer_id, language=language
            )
        case Decide():
            return await turns.decide(
                conversation_id=conversation.pk,
                call_id=request.call_id,
                user=user,
                approve=request.approve,
                reason=request.reason,
                edits=request.edits,
                shown=request.fingerprint,
            )
        case AnswerQuestion():
            await elicitations.answer(
                conversation_id=conversation.pk,
                question_id=request.question_id,
                user=user,
                action=request.action,
                values=request.values,
            )
        case Ask():
            return await turns.begin(
                conversation=conversation,
                text=request.text,
                client_id=request.client_id,
                language=language,
                guard=guard,
            )
    return None
