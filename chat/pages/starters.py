"""The prompts an empty conversation offers: one click sends one. The demo's cover each path
the agent can take; GLASSBOX_STARTERS replaces them (checked at start-up, chat.apps)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext_lazy as _

SHOWN = 6


@dataclass(frozen=True, slots=True)
class Starter:
    icon: str
    prompt: str


# Each one, translated, still takes its path in the demo model's other languages.
DEMO = (
    ("🔍", _("How do I negotiate my salary?")),
    ("🕒", _("What time is it, and how do I prepare for an interview?")),
    ("🧩", _("Compare five salary surveys for an engineer")),
    ("✉️", _("Email advisor@example.com: can we meet on Tuesday?")),
    ("📝", _("Draft an offer letter for an engineer")),
    ("🙋", _("I would like to talk to a human advisor")),
)


def for_page() -> list[Starter]:
    configured = settings.GLASSBOX_STARTERS
    if not isinstance(configured, list):  # unset (checked at start-up)
        return [Starter(icon, str(prompt)) for icon, prompt in DEMO]
    return [Starter("💬", prompt) for prompt in configured[:SHOWN]]


def problem(value: object) -> str:
    """Why GLASSBOX_STARTERS cannot be used, or ''."""
    if value is None:
        return ""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        return "GLASSBOX_STARTERS must be a JSON list of non-empty strings."
    if any(len(v) > settings.GLASSBOX_MAX_MESSAGE_CHARS for v in value):
        return "Each of GLASSBOX_STARTERS must fit GLASSBOX_MAX_MESSAGE_CHARS."
    return ""
