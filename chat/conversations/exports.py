"""A conversation as a Markdown document a person can keep: questions, answers, and each
turn's feed as a folded list."""

from __future__ import annotations

from collections.abc import Callable

from django.utils.translation import gettext as _

from activity.preferences.feed_prefs import LOG_LEVEL_WORDS
from activity.presenting.presentation import seconds
from activity.recording.events import ToolLog
from chat.conversations.inert_markdown import bad_targets, inert, literal
from chat.conversations.selectors import TurnView
from chat.models import Conversation, Message


def conversation_markdown(conversation: Conversation, messages: list[Message | TurnView]) -> str:
    """The document, checked by a parse as a viewer reads it. Should that parse still find
    a link the page drops (a trick the pass over the text did not see), each question and
    answer it finds one in is written as plain text, and if the document still holds one,
    every question and answer is."""
    document = _document(conversation, messages, inert)
    if not bad_targets(document):
        return document
    document = _document(conversation, messages, _inert_or_plain)
    if bad_targets(document):
        document = _document(conversation, messages, literal)
    return document


def _inert_or_plain(markdown: str) -> str:
    defused = inert(markdown)
    return literal(markdown) if bad_targets(defused) else defused


def _document(
    conversation: Conversation,
    messages: list[Message | TurnView],
    written: Callable[[str], str],
) -> str:
    parts = [f"# {written(' '.join(conversation.display_title.split()))}", ""]
    for message in messages:
        if isinstance(message, Message):
            parts += ["## " + written(" ".join(message.content.split())), ""]
            continue
        feed = message.feed
        if message.superseded:
            parts += [emphasis(_("Earlier version of this answer, replaced by the next one.")), ""]
        elif message.message.replaces_id:
            parts += [
                emphasis(_("Regenerated: this answer replaces the earlier version above.")),
                "",
            ]
        if feed is not None and message.lines:
            summary = f"{feed.summary_icon} {feed.summary_text}".strip() or _("Activity")
            parts += ["<details>", f"<summary>{_plain(summary)}</summary>", ""]
            for line in message.lines:
                took = f" · {seconds(line.duration_ms)}" if line.duration_ms is not None else ""
                pointed = "; ".join(f"{link.label}: {link.uri}" for link in line.links)
                pointed = f" — {_plain_line(pointed)}" if pointed else ""
                parts.append(
                    f"- {line.icon} {_plain_line(line.full or line.message)}{took}{pointed}"
                )
                # The plan's checklist and the call's server log, nested under their line.
                parts += [f"  - [{'x' if s.state == 'done' else ' '}] {_plain_line(s.text)}"
                          for s in line.steps]  # fmt: skip
                parts += [f"  - {log_line(log)}" for log in line.logs]
            parts += ["", "</details>", ""]
        parts += [written(message.content.strip()) or emphasis(_("(no answer)")), ""]
        if message.state == Message.State.FAILED:
            parts += [emphasis(_("This answer failed before it was finished.")), ""]
        elif message.state == Message.State.STOPPED:
            parts += [emphasis(_("This answer was stopped before it was finished.")), ""]
        elif message.state != Message.State.COMPLETE:
            parts += [emphasis(_("This answer was interrupted.")), ""]
    return "\n".join(parts).rstrip() + "\n"


def log_line(log: ToolLog) -> str:
    source = f" {log.logger}" if log.logger else ""
    return _plain_line(f"{LOG_LEVEL_WORDS[log.level]}{source}: {log.data}")


def emphasis(text: str) -> str:
    return f"*{text}*"


def _plain(text: str) -> str:
    """Text inside the HTML tags that Markdown viewers render, on one line (a blank line
    would end the HTML block)."""
    flat = " ".join(text.split())
    return flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain_line(text: str) -> str:
    """A feed line (tool arguments, the model's words) in a Markdown list: one line, no
    HTML, no link."""
    return _plain(text).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
