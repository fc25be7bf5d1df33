from __future__ import annotations

from django import template

register = template.Library()
CHART_HEIGHT = 120


@register.filter
def bar_height(value: int, peak: int) -> int:
    return round(CHART_HEIGHT * value / peak) if peak else 0


@register.filter
def bar_top(value: int, peak: int) -> int:
    return 130 - bar_height(value, peak)
