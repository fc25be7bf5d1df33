"""What a waiting call's card shows and what an owner may change before approving: the
arguments' fingerprint (activity.recording.receipts), the edit form built from the tool's
parameters (its JSON schema), and the reading and checking of the edits, whichever way they
come: typed JSON from a program, or a form's text fields from a page."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from django.utils.translation import gettext as _

from activity.recording.receipts import fingerprint_or_blank
from chat.models import Message, ToolApproval
from chat.turns.admission import TurnRejected

FEEDBACK_ARG = "feedback_to_user"
# A page's edit form names each argument's field so: `argument.to`, `argument.subject`.
ARGUMENT_FIELD = "argument."
SIMPLE_KINDS = ("string", "number", "integer", "boolean")


class EditRefused(TurnRejected):
    """Edits that do not fit the tool's parameters: nothing is saved, the call still waits."""

    status = 400


class ChangedSinceShown(TurnRejected):
    """The owner decided on a card that no longer shows what would run."""

    status = 409


@dataclass(frozen=True, slots=True)
class Edits:
    """Arguments the owner wants the call to run with instead. `from_form`: each value is a
    form field's text, read by its parameter's type; else the values are JSON as they are."""

    values: Mapping[str, Any]
    from_form: bool = False


@dataclass(frozen=True, slots=True)
class EditField:
    """One argument in the card's edit form."""

    name: str
    # string, number, integer, boolean, enum, or json (anything else, in a textarea).
    kind: str
    value: str
    required: bool
    description: str = ""
    choices: tuple[str, ...] = ()

    @property
    def field_name(self) -> str:
        return ARGUMENT_FIELD + self.name


def _resolved(schema: Mapping[str, Any], parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    """A property's schema, through one local `$ref` (pydantic puts enums in `$defs`)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = parameters.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(found, Mapping):
            return found
    return schema


def _kind(schema: Mapping[str, Any]) -> str:
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return "enum"
    kind = schema.get("type")
    return kind if kind in SIMPLE_KINDS else "json"


def _as_text(kind: str, value: Any) -> str:
    if value is None:
        return ""
    if kind in ("string", "enum") and isinstance(value, str):
        return value
    if kind == "boolean":
        return "true" if value is True else "false" if value is False else ""
    return json.dumps(value, ensure_ascii=False, indent=2 if kind == "json" else None)


def form_fields(
    parameters: Mapping[str, Any] | None, arguments: Mapping[str, Any]
) -> list[EditField]:
    """The edit form's fields, in the schema's order, filled with the arguments as asked; the
    model's feedback line is not the owner's to edit."""
    parameters = parameters or {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    fields = []
    for name, raw in properties.items():
        if name == FEEDBACK_ARG or not isinstance(raw, Mapping):
            continue
        schema = _resolved(raw, parameters)
        kind = _kind(schema)
        fields.append(
            EditField(
                name=name,
                kind=kind,
                value=_as_text(kind, arguments.get(name)),
                required=name in required,
                description=str(raw.get("description") or schema.get("description") or ""),
                choices=tuple(schema["enum"]) if kind == "enum" else (),
            )
        )
    return fields


def edited_arguments(
    parameters: Mapping[str, Any] | None, asked: Mapping[str, Any], edits: Edits
) -> dict[str, Any] | None:
    """The arguments to run instead of `asked`, checked against the tool's parameters; None
    when the edits change nothing. EditRefused says which argument is wrong and why."""
    parameters = parameters or {"type": "object"}
    values = _from_form(parameters, edits.values) if edits.from_form else dict(edits.values)
    if FEEDBACK_ARG in asked and FEEDBACK_ARG not in values:
        values[FEEDBACK_ARG] = asked[FEEDBACK_ARG]  # the model's line, not the owner's
    try:
        validator = jsonschema.validators.validator_for(parameters)(parameters)
        problem = jsonschema.exceptions.best_match(validator.iter_errors(values))
    except jsonschema.exceptions.SchemaError:
        raise EditRefused(
            _("This tool's parameters cannot check edits; approve or deny it as it is.")
        ) from None
    if problem is not None:
        where = ".".join(str(part) for part in problem.absolute_path)
        if not where:  # a missing or unknown argument: the message names it
            raise EditRefused(
                _("The edited arguments are not valid: %(problem)s") % {"problem": problem.message}
            )
        raise EditRefused(
            _("The edited argument “%(name)s” is not valid: %(problem)s")
            % {"name": where, "problem": problem.message}
        )
    if fingerprint_or_blank(values) == "":
        raise EditRefused(_("The edited arguments hold a number too large to fingerprint."))
    return None if values == dict(asked) else values


def _from_form(parameters: Mapping[str, Any], texts: Mapping[str, Any]) -> dict[str, Any]:
    """A form's text fields read by their parameters' types; an empty optional field is left
    out, and a field the tool does not have is refused."""
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    values: dict[str, Any] = {}
    for name, text in texts.items():
        if name not in properties or name == FEEDBACK_ARG:
            raise EditRefused(_("This tool has no argument “%(name)s”.") % {"name": name})
        if not isinstance(text, str):
            raise EditRefused(_("The edited argument “%(name)s” must be text.") % {"name": name})
        kind = _kind(_resolved(properties[name], parameters))
        if text.strip() == "" and kind != "string" and name not in required:
            continue
        values[name] = _read_text(name, kind, text)
    return values


def _read_text(name: str, kind: str, text: str) -> Any:
    if kind in ("string", "enum"):
        return text
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    try:
        value = json.loads(text, parse_constant=_not_json)
    except ValueError:
        value = text
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind == "json" and value is text:
        raise EditRefused(_("The edited argument “%(name)s” is not JSON.") % {"name": name})
    return value  # its type is checked with the rest, against the schema


def _not_json(constant: str) -> object:
    raise ValueError(constant)


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a decision asks of its call: edits to run with, and the fingerprint the card
    showed (blank: not said). As `bound` returns it: the fingerprint decided on, and the
    edited arguments, if any."""

    edits: Edits | None = None
    shown: str = ""
    fingerprint: str = ""
    edited_arguments: dict[str, Any] | None = None


NO_RECEIPT = Receipt()


def bound(approval: Any, asked: Receipt) -> Receipt:
    """The receipt of a decision on `approval` (a ToolApproval): the fingerprint of what it
    lets run, edits checked against the tool's parameters. Refuses a card that showed other
    arguments than the call's, and edits that do not fit."""
    if asked.shown and asked.shown != approval.fingerprint:
        raise ChangedSinceShown(
            _("This call is not the one your card showed any more; reload and decide again.")
        )
    edited = None
    if asked.edits is not None:
        edited = edited_arguments(approval.parameters, approval.arguments, asked.edits)
    if edited is None:
        return Receipt(fingerprint=approval.fingerprint)
    return Receipt(fingerprint=fingerprint_or_blank(edited), edited_arguments=edited)


@dataclass(frozen=True, slots=True)
class ApprovalCard:
    """A waiting call as its card shows it: what exactly will run, its fingerprint, and the
    form to change it before approving."""

    answer_id: int
    conversation_id: Any
    call_id: str
    tool: str
    arguments: dict[str, Any]
    fingerprint: str
    deadline: Any
    fields: list[EditField]
    # On a page of its own (the inbox): with its own approve and deny buttons, posting back
    # to the inbox; in a conversation the waiting line has them, and the socket carries them.
    standalone: bool = False

    @property
    def shown_arguments(self) -> str:
        shown = {k: v for k, v in self.arguments.items() if k != FEEDBACK_ARG}
        return json.dumps(shown, ensure_ascii=False, indent=2)

    @property
    def short_fingerprint(self) -> str:
        digest = self.fingerprint.removeprefix("sha256:")
        return f"{digest[:12]}…{digest[-4:]}" if digest else ""


def card_of(approval: Any, *, standalone: bool = False) -> ApprovalCard:
    """The card of a waiting ToolApproval (its answer loaded for the conversation's id)."""
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    return ApprovalCard(
        answer_id=approval.answer_id,
        conversation_id=approval.answer.conversation_id,
        call_id=approval.call_id,
        tool=approval.tool,
        arguments=arguments,
        fingerprint=approval.fingerprint,
        deadline=approval.deadline,
        fields=form_fields(approval.parameters, arguments),
        standalone=standalone,
    )


def waiting_card(answer_id: int) -> ApprovalCard | None:
    """The card of the call `answer_id` waits on, if it still waits."""
    approval = (
        ToolApproval.objects.filter(
            answer_id=answer_id, decision="", answer__state=Message.State.WAITING
        )
        .select_related("answer")
        .first()
    )
    return card_of(approval) if approval is not None else None
