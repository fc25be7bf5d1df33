"""A waiting call's card: what exactly will run, argument by argument under the names people
read, then its deadline and its receipt (the fingerprint), with the form to change it before
approving. An MCP server's titles, names and descriptions are untrusted text: the template
escapes them, and they are cut here to a label's length."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from activity.presenting.bounded import VALUE_LIMIT, cut_long
from chat.agent.tools import Tool, ToolRegistry
from chat.asks.receipts import (
    ARGUMENT_FIELD,
    FEEDBACK_ARG,
    EditRefused,
    Edits,
    as_text,
    kind_of,
    resolved,
)

# Text longer than SHORT_TEXT, or with a line break, or that may grow past LONG_TEXT (an
# e-mail's body), is shown in a box of several lines.
SHORT_TEXT = 80
LONG_TEXT = 500
LABEL_LIMIT = 80
DESCRIPTION_LIMIT = 300
# camelCase's word boundaries; one character of look-around each side: linear.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class CardField:
    """One argument on the card: shown read-only, or a field of the edit form."""

    name: str
    # The id of its control in the page (unique: a page may show several cards).
    dom_id: str
    label: str
    # string, number, integer, boolean, enum, or json (anything else, written as JSON).
    kind: str
    value: str
    required: bool
    description: str = ""
    choices: tuple[str, ...] = ()
    multiline: bool = False
    # The schema's `format` (an e-mail address gets the keyboard for one).
    format: str = ""
    # False for an argument the tool's parameters do not list: shown, never edited.
    editable: bool = True
    # Why a refused edit of this argument was refused.
    error: str = ""

    @property
    def field_name(self) -> str:
        return ARGUMENT_FIELD + self.name

    @property
    def rows(self) -> int:
        lines = self.value.count("\n") + 1 + len(self.value) // 70
        return max(3, min(lines, 12))


@dataclass(frozen=True, slots=True)
class ApprovalCard:
    """A waiting call as its card shows it."""

    answer_id: int
    conversation_id: Any
    call_id: str
    # The tool's name (its id, for the receipt) and its title (for people).
    tool: str
    title: str
    fingerprint: str
    deadline: Any
    fields: tuple[CardField, ...]
    # On a page of its own (the inbox): its forms post back to the inbox; in a conversation
    # they go over the socket, or to the conversation's address without JavaScript.
    standalone: bool = False
    # The fields are the edit form's (the owner chose Change, or an edit was refused).
    editing: bool = False
    # Why an edit was refused, when no field shown here is the one at fault.
    problem: str = ""

    @property
    def editable(self) -> bool:
        return any(field.editable for field in self.fields)

    @property
    def focus(self) -> str:
        """The field to start in when editing: the one refused, else the first."""
        editable = [field for field in self.fields if field.editable]
        refused = [field for field in editable if field.error]
        return (refused or editable)[0].name if editable else ""

    @property
    def short_fingerprint(self) -> str:
        digest = self.fingerprint.removeprefix("sha256:")
        return f"{digest[:12]}…{digest[-4:]}" if digest else ""


def card_of(approval: Any, *, standalone: bool = False, editing: bool = False) -> ApprovalCard:
    """The card of a waiting ToolApproval (its answer loaded for the conversation's id)."""
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    builtin = builtin_tool(approval.tool)
    if builtin is not None:  # our own words, in the reader's language
        title = str(builtin.title or approval.tool)
    else:
        title = _one_line(approval.title or approval.tool, LABEL_LIMIT)
    fields = card_fields(
        approval.parameters,
        arguments,
        translated=builtin is not None,
        prefix=f"edit-{approval.answer_id}-",
    )
    return ApprovalCard(
        answer_id=approval.answer_id,
        conversation_id=approval.answer.conversation_id,
        call_id=approval.call_id,
        tool=approval.tool,
        title=title,
        fingerprint=approval.fingerprint,
        deadline=approval.deadline,
        fields=fields,
        standalone=standalone,
        editing=editing and any(field.editable for field in fields),
    )


def with_refusal(card: ApprovalCard, edits: Edits | None, refusal: EditRefused) -> ApprovalCard:
    typed = dict(edits.values) if edits is not None and edits.from_form else {}
    fields = []
    for field in card.fields:
        text = typed.get(field.name)
        if isinstance(text, str) and field.editable:
            multiline = field.multiline or _long(text)
            field = dataclasses.replace(field, value=text, multiline=multiline)
        if field.name == refusal.field and field.editable:
            field = dataclasses.replace(field, error=refusal.problem)
        fields.append(field)
    named = any(field.error for field in fields)
    return dataclasses.replace(
        card, fields=tuple(fields), editing=True, problem="" if named else str(refusal)
    )


def card_fields(
    parameters: Mapping[str, Any] | None,
    arguments: Mapping[str, Any],
    *,
    translated: bool,
    prefix: str,
) -> tuple[CardField, ...]:
    """The card's fields: the tool's parameters (required ones first, as the schema lists
    them), filled with the arguments as asked, then any argument they do not list. The
    model's feedback line is not the owner's to see or edit. `translated`: the titles and
    descriptions are our own (a built-in tool's), shown in the reader's language. `prefix`:
    of the fields' ids (a parameter's name, the server's, is no id)."""
    parameters = parameters if isinstance(parameters, Mapping) else {}
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    listed = parameters.get("required")
    listed = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    required = set(listed)
    # PostgreSQL's jsonb keeps an object's keys in its own order (shortest first), not the
    # schema's; a list keeps its order: the required ones as listed, then the others.
    ordered = [n for n in dict.fromkeys(listed) if n in properties]
    ordered += [n for n in properties if n not in required]
    fields: list[CardField] = []
    for name in ordered:
        raw = properties[name]
        if name == FEEDBACK_ARG or not isinstance(raw, Mapping):
            continue
        schema = resolved(raw, parameters)
        kind = kind_of(schema)
        value = as_text(kind, arguments.get(name))
        # Too long for a socket's frame: shown cut, and not edited (its text would not be
        # the value); an edit of the others keeps it as asked (receipts._from_form).
        whole = len(value) <= VALUE_LIMIT
        limit, fmt = schema.get("maxLength"), schema.get("format")
        about = raw.get("description") or schema.get("description")
        fields.append(
            CardField(
                name=name,
                dom_id=f"{prefix}{len(fields) + 1}",
                label=_label(name, raw.get("title"), translated),
                kind=kind,
                value=cut_long(value),
                required=name in required,
                description=_words(about, translated),
                choices=tuple(schema["enum"]) if kind == "enum" else (),
                format=fmt if isinstance(fmt, str) else "",
                multiline=kind == "json"
                or (kind == "string" and (_long(value) or _allows_long(limit))),
                editable=whole,
            )
        )
    for name, value in arguments.items():
        if name == FEEDBACK_ARG or name in properties:
            continue
        kind = "string" if isinstance(value, str) else "json"
        text = as_text(kind, value)
        fields.append(
            CardField(
                name=name,
                dom_id=f"{prefix}{len(fields) + 1}",
                label=_label(name, None, translated=False),
                kind=kind,
                value=cut_long(text),
                required=False,
                multiline=kind == "json" or _long(text),
                editable=False,
            )
        )
    return tuple(fields)


def humanized(name: str) -> str:
    """A parameter's name as words: `to` → "To", `max_results` and `maxResults` → "Max
    results", `userID` → "User ID"."""
    words = _CAMEL.sub(" ", name[:LABEL_LIMIT]).replace("_", " ").replace("-", " ").split()
    if not words:
        return name[:LABEL_LIMIT]
    first, *rest = words
    rest = [word.lower() if word[1:].islower() else word for word in rest]
    return " ".join([first[:1].upper() + first[1:], *rest])


def builtin_tool(name: str) -> Tool | None:
    """The built-in tool of that name (GLASSBOX_TOOLS), if it is one."""
    tool = _builtins(tuple(settings.GLASSBOX_TOOLS)).get(name)
    return tool if isinstance(tool, Tool) else None


@functools.lru_cache(maxsize=4)
def _builtins(paths: tuple[str, ...]) -> ToolRegistry:
    return ToolRegistry.from_paths(paths)


def _label(name: str, title: object, translated: bool) -> str:
    if isinstance(title, str) and title.strip():
        return _one_line(gettext(title) if translated else title, LABEL_LIMIT)
    return humanized(name)


def _words(text: object, translated: bool) -> str:
    if not isinstance(text, str):
        return ""
    return _one_line(gettext(text) if translated else text, DESCRIPTION_LIMIT)


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _long(text: str) -> bool:
    return len(text) > SHORT_TEXT or "\n" in text


def _allows_long(limit: object) -> bool:
    return isinstance(limit, int) and not isinstance(limit, bool) and limit > LONG_TEXT
