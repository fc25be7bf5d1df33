"""The form an MCP server asks for (elicitation's `requestedSchema`): a flat object of strings,
numbers, integers, booleans and enums. Read into fields a page can render, and the person's
answer checked against them. Pure: no I/O, no Django models.

Everything here came from the server, so it is untrusted: titles and descriptions are cut to a
budget, and the page escapes them."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from chat.agent.schemas import BOUNDS, SchemaBounds, compiled, is_email, screened

TITLE_LIMIT = 120
DESCRIPTION_LIMIT = 500
FIELD_LIMIT = 30
OPTION_LIMIT = 100
KINDS = ("string", "number", "integer", "boolean")
# The 2025-11-25 schema names no way to mark a field secret (it asks servers to use URL mode
# for secrets); a server that asks for a string of format "password" anyway, or marks a field
# "writeOnly" (JSON Schema's own word for it), gets it sent but never stored in clear.
SENSITIVE_FORMATS = frozenset({"password"})
WITHHELD = "(withheld)"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$")


class UnsupportedForm(Exception):
    """The server asked for something a flat form cannot hold (nested objects, arrays of
    objects...): the question is refused, never half shown."""


@dataclass(frozen=True, slots=True)
class Option:
    value: str
    title: str


@dataclass(frozen=True, slots=True)
class Field:
    """One question of the form, as the server described it."""

    name: str
    kind: str  # string, number, integer or boolean
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    options: tuple[Option, ...] = ()
    # A multi-select enum (an array of strings): the answer is a list of options.
    many: bool = False
    format: str = ""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    sensitive: bool = False
    # The spec names none, but a server may send one: checked on RE2 (chat.agent.schemas).
    pattern: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "required": self.required,
            "default": self.default,
            "options": [{"value": o.value, "title": o.title} for o in self.options],
            "many": self.many,
            "format": self.format,
            "sensitive": self.sensitive,
        }


def _text(value: Any, limit: int) -> str:
    text = " ".join(str(value).split()) if isinstance(value, str) else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _options(spec: dict[str, Any]) -> tuple[Option, ...]:
    """Enum choices in the three spellings the spec allows: `enum` (+ legacy `enumNames`),
    `oneOf`/`anyOf` of `{const, title}`."""
    listed = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(listed, list):
        return tuple(
            Option(str(item["const"]), _text(item.get("title") or item["const"], TITLE_LIMIT))
            for item in listed[:OPTION_LIMIT]
            if isinstance(item, dict) and isinstance(item.get("const"), str)
        )
    values = spec.get("enum")
    if not isinstance(values, list):
        return ()
    names = spec.get("enumNames")
    names = names if isinstance(names, list) and len(names) == len(values) else values
    return tuple(
        Option(value, _text(name, TITLE_LIMIT) or value)
        for value, name in zip(values[:OPTION_LIMIT], names, strict=False)
        if isinstance(value, str)
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _length(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_form(schema: Any, bounds: SchemaBounds = BOUNDS) -> tuple[Field, ...]:
    """The fields of a requested schema, in the server's order. Raises UnsupportedForm for a
    schema that is not a flat object of the spec's primitive types, or that cannot be
    checked in bounded time (too large, or a pattern RE2 cannot take)."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise UnsupportedForm(_("the form is not an object"))
    if why := screened(schema, bounds):
        raise UnsupportedForm(why)
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict) or len(properties) > FIELD_LIMIT:
        raise UnsupportedForm(_("the form has too many or malformed fields"))
    required = schema.get("required") or []
    fields = []
    for name, spec in properties.items():
        if not isinstance(spec, dict):
            raise UnsupportedForm(_("field %(name)s is malformed") % {"name": repr(name)})
        kind = spec.get("type")
        many = False
        options = _options(spec)
        if kind == "array":
            items = spec.get("items")
            if not isinstance(items, dict) or not (options := _options(items)):
                raise UnsupportedForm(
                    _("field %(name)s is a list of something other than choices")
                    % {"name": repr(name)}
                )
            kind, many = "string", True
        if kind not in KINDS:
            raise UnsupportedForm(
                _("field %(name)s has a type a form cannot hold") % {"name": repr(name)}
            )
        form = spec["format"] if isinstance(spec.get("format"), str) else ""
        fields.append(
            Field(
                name=str(name),
                kind=str(kind),
                title=_text(spec.get("title"), TITLE_LIMIT) or _text(name, TITLE_LIMIT),
                description=_text(spec.get("description"), DESCRIPTION_LIMIT),
                required=name in required,
                default=spec.get("default"),
                options=options,
                many=many,
                format=form,
                minimum=_number(spec.get("minimum")),
                maximum=_number(spec.get("maximum")),
                min_length=_length(spec.get("minLength")),
                max_length=_length(spec.get("maxLength")),
                sensitive=form in SENSITIVE_FORMATS or spec.get("writeOnly") is True,
                pattern=spec["pattern"] if isinstance(spec.get("pattern"), str) else "",
            )
        )
    return tuple(fields)


class Invalid(Exception):
    """An answer that does not fit the form: per field, what is wrong, for the person."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def _one(field: Field, raw: Any, bounds: SchemaBounds) -> Any:
    """One value, from JSON (its own type) or from a form (a string), or raises ValueError
    with the reason."""
    if field.many:
        values = raw if isinstance(raw, list) else [raw]
        allowed = {o.value for o in field.options}
        if not all(isinstance(v, str) and v in allowed for v in values):
            raise ValueError(_("choose among the options"))
        return list(dict.fromkeys(values))
    if field.kind == "boolean":
        if isinstance(raw, bool):
            return raw
        if raw in ("true", "on", "1", "yes"):
            return True
        if raw in ("false", "off", "0", "no", ""):
            return False
        raise ValueError(_("answer yes or no"))
    if field.kind in ("number", "integer"):
        if isinstance(raw, bool):
            raise ValueError(_("enter a number"))
        try:
            number = float(raw) if isinstance(raw, str | int | float) else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ValueError(_("enter a number"))
        if field.kind == "integer":
            if number != int(number):
                raise ValueError(_("enter a whole number"))
            number = int(number)
        if field.minimum is not None and number < field.minimum:
            raise ValueError(_("at least %(min)s") % {"min": f"{field.minimum:g}"})
        if field.maximum is not None and number > field.maximum:
            raise ValueError(_("at most %(max)s") % {"max": f"{field.maximum:g}"})
        return number
    if not isinstance(raw, str):
        raise ValueError(_("enter text"))
    if len(raw) > bounds.answer_chars:
        raise ValueError(_("too long"))
    if field.options and raw not in {o.value for o in field.options}:
        raise ValueError(_("choose among the options"))
    if field.min_length is not None and len(raw) < field.min_length:
        raise ValueError(_("at least %(count)d characters") % {"count": field.min_length})
    if field.max_length is not None and len(raw) > field.max_length:
        raise ValueError(_("at most %(count)d characters") % {"count": field.max_length})
    if field.pattern and compiled(field.pattern).search(raw) is None:
        raise ValueError(_("enter text in the form the server asks for"))
    if field.format == "email" and not is_email(raw):
        raise ValueError(_("enter an email address"))
    if field.format == "date" and not DATE.match(raw):
        raise ValueError(_("enter a date (YYYY-MM-DD)"))
    if field.format == "date-time" and not DATE_TIME.match(raw):
        raise ValueError(_("enter a date and time"))
    if field.format == "uri" and not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$", raw):
        raise ValueError(_("enter an address (URI)"))
    return raw


def check_answer(
    fields: tuple[Field, ...], values: dict[str, Any], bounds: SchemaBounds = BOUNDS
) -> dict[str, Any]:
    """The answer as the server gets it (typed values, only the form's fields), or raises
    Invalid with every field's problem. An empty optional field is left out."""
    errors: dict[str, str] = {}
    content: dict[str, Any] = {}
    known = {f.name for f in fields}
    for name in values:
        if name not in known:
            errors[name] = _("the form has no such field")
    for field in fields:
        raw = values.get(field.name)
        missing = raw is None or raw == "" or raw == []
        if missing and field.kind != "boolean":
            if field.required:
                errors[field.name] = _("this field is required")
            continue
        if missing and not field.required and field.name not in values:
            continue
        try:
            content[field.name] = _one(field, raw, bounds)
        except ValueError as exc:
            errors[field.name] = str(exc)
    if errors:
        raise Invalid(errors)
    return content


def kept(fields: tuple[Field, ...], content: dict[str, Any]) -> dict[str, Any]:
    """The answer as it is stored and audited: a sensitive field's value is replaced by
    `sha256:<hex>` of its text (so a value can be checked against it, never read back)."""
    sensitive = {f.name for f in fields if f.sensitive}
    return {
        name: (
            "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()
            if name in sensitive
            else value
        )
        for name, value in content.items()
    }


def safe_link(url: str) -> str:
    """The URL as a link only when it is http(s) without credentials: else '' (the page then
    shows it as text only)."""
    if len(url) > 2048 or not re.match(r"^https?://[^\s/@]+(/\S*)?$", url, re.IGNORECASE):
        return ""
    return url
