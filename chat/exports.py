"""A conversation as a Markdown document a person can keep: questions, answers, and each
turn's feed as a folded list."""

from __future__ import annotations

from django.utils.translation import gettext as _

from activity.presentation import seconds
from chat.models import Conversation, Message
from chat.selectors import TurnView


def conversation_markdown(conversation: Conversation, messages: list[Message | TurnView]) -> str:
    parts = [f"# {conversation.display_title}", ""]
    for message in messages:
        if isinstance(message, Message):
            parts += ["## " + " ".join(message.content.split()), ""]
            continue
        feed = message.feed
        if message.lines:
            summary = f"{feed.summary_icon} {feed.summary_text}".strip() or _("Activity")
            parts += ["<details>", f"<summary>{_plain(summary)}</summary>", ""]
            for line in message.lines:
                took = f" · {seconds(line.duration_ms)}" if line.duration_ms is not None else ""
                parts.append(f"- {line.icon} {_plain(line.full or line.message)}{took}")
            parts += ["", "</details>", ""]
        parts += [message.content.strip() or f"*{_('(no answer)')}*", ""]
        if message.state == Message.State.FAILED:
            parts += [f"*{_('This answer failed before it was finished.')}*", ""]
        elif message.state != Message.State.COMPLETE:
            parts += [f"*{_('This answer was interrupted.')}*", ""]
    return "\n".join(parts).rstrip() + "\n"


def _plain(text: str) -> str:
    # Feed lines go inside HTML tags that Markdown viewers render: keep them inert.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
