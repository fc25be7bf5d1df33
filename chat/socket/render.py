"""What a socket sends: HTML fragments for htmx's ws extension (each top-level element is
swapped in by id; live streaming and history render the same templates), or the JSON events
for programs; chat.socket.wires says which a socket sends when."""

from __future__ import annotations

import json
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _

from activity.presenting.live import AddLine, AppendBlocks, Op, RemoveLine, ReplaceLine, SetTail
from activity.recording.events import Error, TurnStarted, to_json
from chat.asks.approval_cards import ApprovalCard
from chat.conversations.markdown import render_markdown
from chat.conversations.selectors import TurnView
from chat.models import Message


def json_frame(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False)


def started(question: Message, answer: TurnView) -> str:
    """A new turn: the question and the empty answer card."""
    return clear_notice() + turn_started(question, answer)


def regenerated(question: Message, earlier: TurnView, answer: TurnView) -> str:
    """A new answer in place of `earlier`, which folds into an earlier version."""
    context = {"earlier": earlier, "answer": answer}
    return clear_notice() + render_to_string("chat/_regenerated.html", context)


def too_large() -> str:
    return _("Part of this conversation is too large to show here; reload the page to see it.")


def as_json_event(event: TurnStarted | Error) -> str:
    return json_frame(to_json(event))


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
        case AppendBlocks(source):
            # Wrapped in an element: only top-level elements are swapped in, its children
            # appended. Rendered like the final answer: no raw HTML, sanitized by nh3.
            return format_html(
                '<div hx-swap-oob="beforeend:#answer-{}-blocks">{}</div>',
                answer_id,
                mark_safe(render_markdown(source)),
            )
        case SetTail(text):
            return format_html(
                '<div id="answer-{}-tail" class="tail" hx-swap-oob="true">{}</div>',
                answer_id,
                text,
            )
    raise TypeError(f"not a live operation: {op!r}")


def approval_card(answer_id: int, card: ApprovalCard | None) -> str:
    """A waiting call's card into its turn's slot, or the slot emptied (decided)."""
    if card is None:
        return format_html(
            '<div id="approval-{}" class="approval-slot" hx-swap-oob="true"></div>', answer_id
        )
    answer_url = reverse("chat:conversation_act", args=[card.conversation_id])
    context = {"card": card, "oob": True, "answer_url": answer_url}
    return render_to_string("chat/_approval_card.html", context)


def assistant_message(message: TurnView) -> str:
    html = render_to_string("chat/_assistant_message.html", {"message": message, "oob": True})
    if message.state in Message.OPEN_STATES:
        return html
    # A refusal shown while the turn ran ("still working…") no longer holds once it ended.
    return clear_notice() + announce(ENDED.get(message.state, ENDED["complete"])()) + html


ENDED = {
    "complete": lambda: _("The answer is ready."),
    "failed": lambda: _("The answer failed; what arrived is kept."),
    # Its process died or shut down: nobody chose it, so the text says it was the server.
    "interrupted": lambda: _("The server stopped while answering; what was saved is kept."),
    # Its owner's Stop: their choice, said plainly, not as a failure.
    "stopped": lambda: _("The answer was stopped; what was saved is kept."),
}


def announce(text: str) -> str:
    return format_html(
        '<div id="announcer" hx-swap-oob="true" class="visually-hidden" aria-live="polite">{}'
        "</div>",
        text,
    )


def notice(text: str, *, level: str = "error") -> str:
    return format_html(
        '<div id="notice" hx-swap-oob="true" class="notice {}" role="alert">{}</div>',
        level,
        text,
    )


def clear_notice() -> str:
    return '<div id="notice" hx-swap-oob="true" class="notice" role="status"></div>'


# The sidebar's cue: swapped in by id, it tells glassbox.js to fetch the list again.
SIDEBAR_STALE = '<span id="sidebar-stale" hx-swap-oob="true" hidden></span>'
