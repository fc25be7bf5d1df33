"""HTML fragments for htmx's ws extension: each top-level element is swapped in by id.
Live streaming and history render the same templates."""

from __future__ import annotations

from django.template.loader import render_to_string
from django.utils.html import format_html

from activity.events import Status, from_json
from activity.presentation import line_for
from chat.models import Message


def turn_started(question: Message, answer: Message) -> str:
    return render_to_string("chat/_turn_started.html", {"question": question, "answer": answer})


def status_line(answer_id: int, event: dict, *, replace: bool) -> str:
    status = from_json(event)
    assert isinstance(status, Status)
    return render_to_string(
        "chat/_live_line.html",
        {
            "line": line_for(status),
            "answer_id": answer_id,
            "replace": replace,
        },
    )


def answer_text(answer_id: int, content: str) -> str:
    # Wrapped in an element: only top-level elements are swapped, and the text is escaped.
    return format_html('<div hx-swap-oob="beforeend:#answer-{}">{}</div>', answer_id, content)


def assistant_message(message: Message) -> str:
    return render_to_string("chat/_assistant_message.html", {"message": message, "oob": True})


def notice(text: str, *, level: str = "error") -> str:
    return format_html(
        '<div id="notice" hx-swap-oob="true" class="notice {}" role="alert">{}</div>',
        level,
        text,
    )


def clear_notice() -> str:
    return '<div id="notice" hx-swap-oob="true" class="notice" role="status"></div>'
