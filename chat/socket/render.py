"""What a socket sends: HTML fragments for htmx's ws extension (each top-level element is
swapped in by id; live streaming and history render the same templates), or the JSON events
for programs."""

from __future__ import annotations

import json
from typing import Any

from django.template.loader import render_to_string
from django.utils.html import format_html

from activity.events import Error, to_json
from activity.live import AddLine, AppendText, Op, RemoveLine, ReplaceLine
from chat.models import Message
from chat.selectors import TurnView


def as_json(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False)


def error_json(text: str) -> str:
    return as_json(to_json(Error(text)))


def turn_started(question: Message, answer: TurnView) -> str:
    return render_to_string("chat/_turn_started.html", {"question": question, "answer": answer})


def live_ops(answer_id: int, ops: list[Op]) -> str:
    return "".join(_live_op(answer_id, op) for op in ops)


def _live_op(answer_id: int, op: Op) -> str:
    match op:
        case AddLine(line) | ReplaceLine(line):
            context = {
                "line": line,
                "answer_id": answer_id,
                "replace": isinstance(op, ReplaceLine),
                "live": True,
            }
            return render_to_string("chat/_live_line.html", context)
        case RemoveLine(key):
            return format_html('<li id="line-{}-{}" hx-swap-oob="delete"></li>', answer_id, key)
        case AppendText(text):
            # Wrapped in an element: only top-level elements are swapped; the text is escaped.
            return format_html('<div hx-swap-oob="beforeend:#answer-{}">{}</div>', answer_id, text)
    raise TypeError(f"not a live operation: {op!r}")


def assistant_message(message: TurnView) -> str:
    return render_to_string("chat/_assistant_message.html", {"message": message, "oob": True})


def notice(text: str, *, level: str = "error") -> str:
    return format_html(
        '<div id="notice" hx-swap-oob="true" class="notice {}" role="alert">{}</div>',
        level,
        text,
    )


def clear_notice() -> str:
    return '<div id="notice" hx-swap-oob="true" class="notice" role="status"></div>'
