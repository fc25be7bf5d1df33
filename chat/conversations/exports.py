"""A conversation as a Markdown document a person can keep: questions, answers, and each
turn's feed as a folded list."""

from __future__ import annotations

import re

from django.utils.translation import gettext as _

from activity.presentation import seconds
from chat.conversations.selectors import TurnView
from chat.models import Conversation, Message


def conversation_markdown(conversation: Conversation, messages: list[Message | TurnView]) -> str:
    parts = [f"# {inert(conversation.display_title)}", ""]
    for message in messages:
        if isinstance(message, Message):
            parts += ["## " + inert(" ".join(message.content.split())), ""]
            continue
        feed = message.feed
        if message.superseded:
            parts += [emphasis(_("Earlier version of this answer, replaced by the next one.")), ""]
        elif message.message.replaces_id:
            parts += [
                emphasis(_("Regenerated: this answer replaces the earlier version above.")),
                "",
            ]
        if message.lines:
            summary = f"{feed.summary_icon} {feed.summary_text}".strip() or _("Activity")
            parts += ["<details>", f"<summary>{_plain(summary)}</summary>", ""]
            for line in message.lines:
                took = f" · {seconds(line.duration_ms)}" if line.duration_ms is not None else ""
                pointed = "; ".join(f"{link.label}: {link.uri}" for link in line.links)
                pointed = f" — {_plain(pointed)}" if pointed else ""
                parts.append(f"- {line.icon} {_plain(line.full or line.message)}{took}{pointed}")
            parts += ["", "</details>", ""]
        parts += [inert(message.content.strip()) or emphasis(_("(no answer)")), ""]
        if message.state == Message.State.FAILED:
            parts += [emphasis(_("This answer failed before it was finished.")), ""]
        elif message.state != Message.State.COMPLETE:
            parts += [emphasis(_("This answer was interrupted.")), ""]
    return "\n".join(parts).rstrip() + "\n"


def emphasis(text: str) -> str:
    return f"*{text}*"


FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")


def inert(markdown: str) -> str:
    """Markdown as safe as the page renders it: no raw HTML (a viewer would run or load it)
    and no images (a viewer would fetch a URL the model chose); code is left as written."""
    lines, fence = [], ""
    for line in markdown.split("\n"):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            lines.append(line)
        elif opening:
            fence = opening.group(1)
            lines.append(line)
        else:
            lines.append(_outside_code_spans(line))
    return "\n".join(lines)


def _outside_code_spans(line: str) -> str:
    parts, last = [], 0
    for span in CODE_SPAN.finditer(line):
        parts += [_defused(line[last : span.start()]), span.group(0)]
        last = span.end()
    return "".join([*parts, _defused(line[last:])])


def _defused(text: str) -> str:
    return text.replace("<", "&lt;").replace("![", "[")


def _plain(text: str) -> str:
    # Feed lines go inside HTML tags that Markdown viewers render: keep them inert.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
