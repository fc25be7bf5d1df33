from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe

from chat.forms import ContactForm
from chat.markdown import render_markdown
from chat.services import contact_form_requested

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    return mark_safe(render_markdown(text or ""))  # sanitized by nh3


@register.filter
def seconds(milliseconds: int) -> str:
    if milliseconds < 10_000:
        return f"{milliseconds / 1000:.1f} s"
    return f"{milliseconds / 1000:.0f} s"


@register.filter
def state_word(state: str) -> str:
    return {"failed": "failed", "in_progress": "done", "done": "done"}.get(state, state)


@register.filter
def wants_contact_form(message) -> bool:
    return contact_form_requested(message)


@register.filter
def contact_form(message) -> ContactForm:
    return ContactForm()
