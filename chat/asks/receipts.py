"""What an owner may change before approving a waiting call, and what their decision binds:
the reading and checking of the edits against the tool's parameters (its JSON schema),
whichever way they come (typed JSON from a program, or a form's text fields from a page), and
the arguments' fingerprint (activity.recording.receipts). The card that shows all this is
chat.asks.approval_cards."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from activity.recording.events import FEEDBACK_ARG
from activity.recording.receipts import fingerprint_or_blank
from chat.agent.schemas import TooLong, Unsupported, first_error, is_email
from chat.conversations.refusals import TurnRejected

if TYPE_CHECKING:
    import jsonschema

# A page's edit form names each argument's field so: `argument.to`, `argument.subject`.
ARGUMENT_FIELD = "argument."
SIMPLE_KINDS = ("string", "number", "integer", "boolean")
# What a refusal quotes of the schema's own words (jsonschema's message, an enum's choices).
QUOTED_LIMIT = 200


class EditRefused(TurnRejected):
    """Edits that do not fit the tool's parameters: nothing is saved, the call still waits.
    `field` names the argument at fault, if one is, and `problem` says what is wrong with it
    in words that fit under that field (the message says it whole, naming the argument)."""

    status = 400

    def __init__(self, message: str, *, field: str = "", problem: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.problem = problem or message


class ChangedSinceShown(TurnRejected):
    """The owner decided on a card that no longer shows what would run."""

    status = 409


@dataclass(frozen=True, slots=True)
class Edits:
    """Arguments the owner wants the call to run with instead. `from_form`: each value is a
    form field's text, read by its parameter's type; else the values are JSON as they are."""

    values: Mapping[str, Any]
    from_form: bool = False


# The formats an edit is checked for: the ones jsonschema checks with no extra package, in
# time linear in the value, and e-mail addresses by Django's rule, the one send_email runs
# (jsonschema's own only looks for an "@"), over 320 characters refused first
# (chat.agent.schemas.is_email). Left out: `regex`, which compiles the owner's text as a
# pattern (deep nesting raises a RecursionError jsonschema does not catch), and those that
# need packages not installed here (hostname, uri, date-time…): not checked. Made with the
# first edit checked, as jsonschema is imported (chat.agent.schemas).
@functools.cache
def formats() -> jsonschema.FormatChecker:
    import jsonschema

    checker = jsonschema.FormatChecker(("date", "ipv4", "ipv6", "uuid"))
    checker.checks("email")(is_address)
    checker.checks("idn-email")(is_address)
    return checker


def is_address(instance: object) -> bool:
    return not isinstance(instance, str) or is_email(instance)


def resolved(schema: Mapping[str, Any], parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    """A property's schema, through one local `$ref` (pydantic puts enums in `$defs`)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = parameters.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(found, Mapping):
            return found
    return schema


def kind_of(schema: Mapping[str, Any]) -> str:
    """How a form field holds a property: string, number, integer, boolean, enum (strings
    to choose from), or json (anything else, written as JSON)."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return "enum"
    kind = schema.get("type")
    return kind if kind in SIMPLE_KINDS else "json"


def as_text(kind: str, value: Any) -> str:
    """A value as its form field shows it (read back by `_read_text`)."""
    if value is None:
        return ""
    if kind in ("string", "enum") and isinstance(value, str):
        return value
    if kind == "boolean":
        return "true" if value is True else "false" if value is False else ""
    return json.dumps(value, ensure_ascii=False, indent=2 if kind == "json" else None)


def edited_arguments(
    parameters: Mapping[str, Any] | None, asked: Mapping[str, Any], edits: Edits
) -> dict[str, Any] | None:
    """The arguments to run instead of `asked`, checked against the tool's parameters,
    formats included; None when the edits change nothing. EditRefused names the argument
    that is wrong, and why."""
    parameters = parameters or {"type": "object"}
    form = edits.from_form
    values = _from_form(parameters, edits.values, asked) if form else dict(edits.values)
    if FEEDBACK_ARG in asked and FEEDBACK_ARG not in values:
        values[FEEDBACK_ARG] = asked[FEEDBACK_ARG]  # the model's line, not the owner's
    if values.get(FEEDBACK_ARG) != asked.get(FEEDBACK_ARG):
        # A program's JSON may send it back as it was; changed, it is refused as the page's
        # form refuses the field (its text is the same).
        raise EditRefused(
            _("This tool has no argument “%(name)s”.") % {"name": FEEDBACK_ARG},
            field=FEEDBACK_ARG,
            problem=_("This tool has no such argument."),
        )
    import jsonschema

    try:
        # Patterns on RE2, the tool's schema and the edits within bounds (chat.agent.schemas).
        problem = first_error(parameters, values, format_checker=formats())
    except (jsonschema.exceptions.SchemaError, Unsupported):
        raise EditRefused(
            _("This tool's parameters cannot check edits; approve or deny it as it is.")
        ) from None
    except TooLong as exc:
        raise EditRefused(
            _("The edited arguments are not valid: %(problem)s") % {"problem": exc},
            field=exc.field,
            problem=_("This is too long."),
        ) from None
    if problem is not None:
        raise refusal_of(problem)
    if fingerprint_or_blank(values) == "":
        raise EditRefused(_("The edited arguments hold a number too large to fingerprint."))
    return None if values == dict(asked) else values


def refusal_of(problem: jsonschema.exceptions.ValidationError) -> EditRefused:
    """A schema's objection in the owner's words, naming the argument: the one at its path,
    or the one it misses or does not know."""
    where = [str(part) for part in problem.absolute_path]
    instance, rule, value = problem.instance, problem.validator, problem.validator_value
    if rule == "required" and isinstance(instance, Mapping) and isinstance(value, list):
        missing = [name for name in value if name not in instance]
        where += [str(missing[0])] if missing else []
    elif rule == "additionalProperties" and isinstance(instance, Mapping):
        schema = problem.schema if isinstance(problem.schema, Mapping) else {}
        known = schema.get("properties") or {}
        unknown = [str(name) for name in instance if name not in known]
        if unknown and not where:
            name = unknown[0]
            return EditRefused(
                _("This tool has no argument “%(name)s”.") % {"name": name},
                field=name,
                problem=_("This tool has no such argument."),
            )
    if not where:
        return EditRefused(
            _("The edited arguments are not valid: %(problem)s")
            % {"problem": _cut(problem.message)}
        )
    said = _said(problem)
    return EditRefused(
        _("The edited argument “%(name)s” is not valid: %(problem)s")
        % {"name": ".".join(where), "problem": said},
        field=where[0],
        problem=said,
    )


def _said(problem: jsonschema.exceptions.ValidationError) -> str:
    """What is wrong with one value, for the line under its field."""
    rule, value = problem.validator, problem.validator_value
    if rule == "required" or (rule == "minLength" and problem.instance == ""):
        return _("This field is required.")
    if rule == "format" and value in ("email", "idn-email"):
        return _("Enter a valid email address.")
    if rule == "format":
        return _("Enter a valid %(format)s.") % {"format": _cut(str(value))}
    if rule == "minLength" and isinstance(value, int):
        return ngettext(
            "Enter at least %(count)d character.", "Enter at least %(count)d characters.", value
        ) % {"count": value}
    if rule == "maxLength" and isinstance(value, int):
        return ngettext(
            "Enter at most %(count)d character.", "Enter at most %(count)d characters.", value
        ) % {"count": value}
    if rule == "type" and isinstance(value, str) and value in TYPE_WORDS:
        return _("This must be %(type)s.") % {"type": TYPE_WORDS[value]}
    if rule == "enum" and isinstance(value, list):
        choices = ", ".join(json.dumps(v, ensure_ascii=False) for v in value)
        return _("Choose one of: %(choices)s.") % {"choices": _cut(choices)}
    return _cut(problem.message)  # the schema's own words (jsonschema's, in English)


TYPE_WORDS = {
    "string": gettext_lazy("text"),
    "integer": gettext_lazy("a whole number"),
    "number": gettext_lazy("a number"),
    "boolean": gettext_lazy("true or false"),
}


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTED_LIMIT else text[: QUOTED_LIMIT - 1] + "…"


def _from_form(
    parameters: Mapping[str, Any], texts: Mapping[str, Any], asked: Mapping[str, Any]
) -> dict[str, Any]:
    """A form's text fields read by their parameters' types, over the arguments the form
    does not send (kept as asked: those the tool does not list, and those too long for the
    card to offer, chat.asks.approval_cards); an empty optional field is left out, and a
    field the tool does not have is refused."""
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    values: dict[str, Any] = {k: v for k, v in asked.items() if k not in texts}
    for name, text in texts.items():
        if name not in properties or name == FEEDBACK_ARG:
            raise EditRefused(
                _("This tool has no argument “%(name)s”.") % {"name": name},
                field=name,
                problem=_("This tool has no such argument."),
            )
        if not isinstance(text, str):
            raise EditRefused(
                _("The edited argument “%(name)s” must be text.") % {"name": name}, field=name
            )
        kind = kind_of(resolved(properties[name], parameters))
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
        raise EditRefused(
            _("The edited argument “%(name)s” is not JSON.") % {"name": name}, field=name
        )
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
