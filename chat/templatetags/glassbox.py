from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe

from activity.presentation import visible_lines
from chat.forms import ContactForm
from chat.markdown import render_markdown
from chat.services import contact_form_requested

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    return mark_safe(render_markdown(text or ""))  # sanitized by nh3


@register.filter
def feed_lines(message) -> list:
    return visible_lines(getattr(message, "feed_events", []))


@register.filter
def wants_contact_form(message) -> bool:
    return contact_form_requested(message)


@register.filter
def contact_form(message) -> ContactForm:
    return ContactForm()
