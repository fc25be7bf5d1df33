"""The API schema says how each operation can fail, not only how it succeeds: every error
body is JSON, {"detail": "…"} or {"<field>": ["…"]}, except that the turn API answers an SSE
client with one `error` event (and the standard streams with their standard's error event).
A request body is an object holding only its own fields (chat.turns.actions reads every
request so): the schema says so with additionalProperties."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# The views' annotations (documented), in the order they were made, until a schema is built.
_undocumented: list[tuple[Any, dict[str, Any]]] = []
_documenting = threading.Lock()


def documented(**options: Any) -> Callable[[T], T]:
    """drf-spectacular's `extend_schema`, applied when a schema is first built. Applied as
    a view is defined, it loads the schema generator, and with it DRF's and Django's test
    clients (3 MiB), into every process that serves a request. Outermost on a method: a
    decorator around it would copy its attributes before the annotation sets them."""

    def note(view: T) -> T:
        _undocumented.append((view, options))
        return view

    return note


def document_views(endpoints: list[Any], **kwargs: Any) -> list[Any]:
    """A drf-spectacular preprocessing hook: the views' annotations, before any is read.
    `extend_schema` changes the view or method it is given, so applying them in their
    order makes the same views as decorating them did."""
    from drf_spectacular.utils import extend_schema

    with _documenting:
        while _undocumented:
            view, options = _undocumented[0]
            # Let go of only once applied: an annotation that fails fails every build.
            extend_schema(**options)(view)
            _undocumented.pop(0)
    return endpoints


PROBLEM = {
    "type": "object",
    "description": 'What went wrong, for people: {"detail": "…"}, or by field {"<field>": "…"}'
    ' or {"<field>": ["…"]}.',
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": {
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
    },
}
WHY = {
    "400": "The request or one of its parameters is invalid; the body names it.",
    "401": "No valid token or session.",
    "403": "Not allowed for this account.",
    "404": "No such thing for this account (another user's is not found either).",
    "409": "A turn of this conversation is already running, or that tool call was already "
    "decided (or timed out).",
    "415": "The body must be JSON.",
    "429": "Too many questions in the last minute, or too many answers running at once.",
    "503": "The database does not answer, or (for a question) this process is restarting; "
    "ask again after Retry-After seconds.",
}

RETRY_AFTER = {
    "description": "Seconds to wait before asking again.",
    "schema": {"type": "integer", "minimum": 0},
}
# As chat.turns.actions reads a body (DEPTH_LIMIT there; a test compares them).
BODY_RULES = (
    " A body is a JSON object holding only the operation's fields (an unknown field, null or "
    "another JSON value is refused), nested at most 8 levels deep."
)


def _errors(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    codes = ["401", "503"]  # 503: any operation while the database is away
    if operation.get("parameters") or operation.get("requestBody"):
        codes.append("400")
    if operation.get("requestBody"):
        codes.append("415")
    if "{" in path:
        codes.append("404")
    if path.startswith("/api/feeds/") and (method == "get" or path.endswith("/labels/")):
        codes.append("403")  # the `user` filter, the dataset and labels are for auditors
    if path.endswith("/feedback/"):
        codes += ["403", "409"]  # ratings switched off; an answer still running
    if path.endswith("/labels/"):
        codes.append("409")  # a feed still running
    if path.endswith("/messages/"):
        codes += ["409", "429"]
    if "/approvals/" in path:
        codes.append("409")
    return codes


def add_error_responses(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """A drf-spectacular postprocessing hook."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = PROBLEM
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            _only_its_fields(operation, schemas)
            media = ["application/json"]
            if path.endswith(("/messages/", "/agui/", "/ui-stream/")):
                media.append("text/event-stream")
            for code in _errors(path, method, operation):
                response: dict[str, Any] = {
                    "description": WHY[code]
                    + (BODY_RULES if code == "400" and "requestBody" in operation else ""),
                    "content": {
                        kind: {"schema": {"$ref": "#/components/schemas/Problem"}}
                        if kind == "application/json"
                        else {"schema": {"type": "string"}}
                        for kind in media
                    },
                }
                if code == "503":
                    response["headers"] = {"Retry-After": RETRY_AFTER}
                operation["responses"].setdefault(code, response)
    return result


def _only_its_fields(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    """An unknown field in a request body is refused, not ignored."""
    for media in operation.get("requestBody", {}).get("content", {}).values():
        ref = media.get("schema", {}).get("$ref", "")
        if ref.startswith("#/components/schemas/"):
            schemas[ref.rsplit("/", 1)[1]]["additionalProperties"] = False
