"""JSON schemas written by MCP servers (a tool's parameters, a question's form), checked so
that no schema and no value can stall the process: every pattern runs on RE2 (linear time,
no backtracking), a schema is refused for its depth, its size, or a pattern RE2 cannot take,
and values are refused for their length before any check runs. The one validator factory of
the tools (chat.agent.mcp.tools), the questions (chat.agent.mcp.elicit_schema) and the
approval edits (chat.asks.receipts). Pure: the limits are handed in (SchemaBounds).

jsonschema and RE2 (about 5 MiB) are imported with the first schema checked, not with the
server: one that connects no MCP server and asks no approval never loads them."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError as DjangoInvalid
from django.core.validators import validate_email
from django.utils.translation import gettext as _

if TYPE_CHECKING:
    import jsonschema
    import re2
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator


@dataclass(frozen=True, slots=True)
class SchemaBounds:
    """What a server's schema, and a value checked against it, may take. The numbers live
    here; the runner hands them to the agent (chat.agent.policy), which reads no settings."""

    # Nesting of a schema: pydantic's models nest a handful of levels; jsonschema descends
    # one Python frame group per level, so a deep one ends in a RecursionError mid-check.
    depth: int = 32
    # A schema's size as JSON: real tools' are a few KB, and each is sent to the model on
    # every request of every turn, so a huge one costs every user's turns.
    schema_bytes: int = 256 * 1024
    # A call's arguments as JSON, refused before any check: a model's arguments are what it
    # wrote (or was made to write); checks that compare items (uniqueItems, enum) grow with it.
    argument_chars: int = 256 * 1024
    # One text of an answer to a server's question (a form field).
    answer_chars: int = 10_000
    # Tools offered per server: each one's schema goes to the model on every request; a
    # server that lists more has the rest dropped, with the reason on the health page.
    tools_per_server: int = 512


BOUNDS = SchemaBounds()
# RFC 3696's erratum 1690 (and Django's EmailValidator): no address is longer; refused
# before any pattern runs.
EMAIL_CHARS = 320


class Unsupported(Exception):
    """A schema refused before use: the message says why, in words for an operator."""


def _options() -> re2.Options:
    import re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported, not logged to stderr by C++
    return options


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str) -> Any:
    """The pattern, compiled by RE2 once; raises Unsupported for one RE2 cannot take
    (backreferences, lookarounds, a repeat over 1,000, a program over RE2's memory)."""
    import re2

    try:
        return re2.compile(pattern, options=_options())
    except re2.error:
        raise Unsupported(
            _("its pattern %(pattern)s cannot be checked in linear time")
            % {"pattern": _quoted(pattern)}
        ) from None


def _quoted(pattern: str) -> str:
    shown = pattern if len(pattern) <= 60 else pattern[:59] + "…"
    return f"“{shown}”"


def _walk(schema: Any, bounds: SchemaBounds) -> Iterator[str]:
    """Every pattern in the schema (`pattern` values, `patternProperties` keys), without
    recursion (a schema deeper than the bound is refused when it is reached)."""
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > bounds.depth:
            raise Unsupported(
                _("its schema is nested more than %(depth)d levels deep") % {"depth": bounds.depth}
            )
        if isinstance(node, Mapping):
            if isinstance(node.get("pattern"), str):
                yield node["pattern"]
            if isinstance(node.get("patternProperties"), Mapping):
                yield from (str(key) for key in node["patternProperties"])
            stack.extend((value, depth + 1) for value in node.values())
        elif isinstance(node, list):
            stack.extend((value, depth + 1) for value in node)


def screen(schema: Any, bounds: SchemaBounds = BOUNDS) -> None:
    """Raises Unsupported for a schema that cannot be checked within the bounds: too deep,
    too large, or with a pattern RE2 cannot take. Depth first: a deep one is refused before
    anything recurses into it."""
    patterns = list(_walk(schema, bounds))
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(text.encode()) > bounds.schema_bytes:
        raise Unsupported(
            _("its schema is %(size)d KB, over the %(limit)d KB allowed")
            % {"size": len(text.encode()) // 1024, "limit": bounds.schema_bytes // 1024}
        )
    for pattern in patterns:
        compiled(pattern)
    if '"unevaluatedProperties"' in text and '"patternProperties"' in text:
        # jsonschema finds the properties these two evaluate with Python's `re`.
        raise Unsupported(
            _("its schema's unevaluatedProperties with patternProperties cannot be checked")
        )


def screened(schema: Any, bounds: SchemaBounds = BOUNDS) -> str:
    """Why the schema is refused ('' when it is not)."""
    try:
        screen(schema, bounds)
    except Unsupported as exc:
        return str(exc)
    except (RecursionError, ValueError, TypeError):
        return _("its schema cannot be read")
    return ""


def is_email(text: str) -> bool:
    """Django's rule (the one send_email runs): over 320 characters refused before its
    patterns, which are linear."""
    if len(text) > EMAIL_CHARS:
        return False
    try:
        validate_email(text)
    except DjangoInvalid:
        return False
    return True


# jsonschema 4.26's keywords that run patterns, on RE2 instead of Python's `re` (whose
# backtracking is exponential on a pattern such as `^(a+)+$`). The bodies are
# jsonschema._keywords' own, with the search swapped (their behaviour: test_hostile_schemas).


def _search(pattern: str, text: str) -> bool:
    return compiled(pattern).search(text) is not None


def _pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(
    validator: Any, pattern_properties: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    for key in instance:
        if key not in properties and not any(_search(p, key) for p in patterns):
            yield key


def _additional_properties(
    validator: Any, allowed: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    from jsonschema._utils import extras_msg
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    extras = set(_additional(instance, schema))
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        if "patternProperties" in schema:
            joined = ", ".join(repr(each) for each in sorted(extras))
            verb = "does" if len(extras) == 1 else "do"
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            error = "Additional properties are not allowed (%s %s unexpected)"
            yield ValidationError(error % extras_msg(sorted(extras, key=str)))


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """Linear, by a hashable key per item (jsonschema compares unhashable items pairwise)."""
    from jsonschema.exceptions import ValidationError

    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for item in instance:
        key = _key(item)
        if key in seen:
            yield ValidationError(f"{instance!r} has non-unique elements")
            return
        seen.add(key)


def _key(value: Any) -> Any:
    """Equal keys for values JSON Schema calls equal (1 == 1.0, true != 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_key(item) for item in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((k, _key(v)) for k, v in value.items()))
    return ("other", repr(value))


_OURS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


@functools.cache
def _bounded(base: type[Validator]) -> type[Validator]:
    import jsonschema

    return jsonschema.validators.extend(base, _OURS)


def validator(
    schema: Mapping[str, Any],
    bounds: SchemaBounds = BOUNDS,
    format_checker: jsonschema.FormatChecker | None = None,
) -> Validator:
    """A validator for a server's schema whose checks all run in bounded time: the draft
    the schema names, with its patterns on RE2. Raises Unsupported for a schema `screen`
    refuses."""
    import jsonschema

    screen(schema, bounds)
    base = jsonschema.validators.validator_for(schema)
    return _bounded(base)(schema, format_checker=format_checker)


def first_error(
    schema: Mapping[str, Any],
    instance: Any,
    bounds: SchemaBounds = BOUNDS,
    format_checker: jsonschema.FormatChecker | None = None,
) -> ValidationError | None:
    """The error jsonschema would name first (best_match), or None. Raises Unsupported for
    a schema that cannot be checked, or arguments over the bound."""
    try:
        sizes = {
            str(key): len(json.dumps(value, ensure_ascii=False, default=str))
            for key, value in (
                instance.items() if isinstance(instance, Mapping) else [("", instance)]
            )
        }
    except RecursionError:
        raise TooLong(_("the arguments are nested too deeply")) from None
    if sum(sizes.values()) > bounds.argument_chars:
        raise TooLong(
            _("the arguments are %(size)d characters, over the %(limit)d allowed")
            % {"size": sum(sizes.values()), "limit": bounds.argument_chars},
            field=max(sizes, key=sizes.__getitem__),
        )
    import jsonschema

    checker = validator(schema, bounds, format_checker)
    try:
        return jsonschema.exceptions.best_match(checker.iter_errors(instance))
    except RecursionError:
        raise TooLong(_("the arguments are nested too deeply")) from None


class TooLong(Exception):
    """A value refused for its size before its schema was checked; `field` names the
    largest argument ('' when the value is not an object)."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field
