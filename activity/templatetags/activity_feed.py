"""What the feed's templates (templates/activity/) need to show a feed: its numbers in the
reader's notation, and `joinlines`, which lets a template of inline elements be written one
element a line."""

from __future__ import annotations

import re
from decimal import Decimal

from django import template
from django.conf import settings
from django.template.base import Node, NodeList, Parser, TextNode, Token
from django.template.context import Context
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from activity.preferences.feed_prefs import LOG_LEVEL_WORDS
from activity.presenting.line_fields import LineFields, fields_of
from activity.presenting.presentation import Line, seconds

register = template.Library()

register.filter("seconds", seconds)


@register.filter
def seconds_format(_value: object) -> str:
    """How a count of seconds reads ("%(seconds)s s"), for the page's live counters."""
    return _("%(seconds)s s")


@register.filter
def tokens(count: int) -> str:
    """ "1,234 tokens", in the reader's notation."""
    shown = number_format(count, force_grouping=True)
    return ngettext("%(count)s token", "%(count)s tokens", count) % {"count": shown}


@register.filter
def cost(amount: Decimal) -> str:
    """A turn's cost with as many decimals as it needs (at most six), and the currency."""
    places = 2 if amount >= 1 else 4 if amount >= Decimal("0.01") else 6
    shown = number_format(amount, decimal_pos=places, force_grouping=True)
    return f"{shown} {settings.GLASSBOX_CURRENCY}"


@register.filter
def fields(line: Line) -> LineFields:
    """The line as fields (RENDER rich): its own text, split."""
    return fields_of(line)


@register.filter
def state_word(state: str) -> str:
    if state == "unfinished":
        return _("not finished")
    return _("failed") if state == "failed" else _("done")


_STEP_WORDS = {
    "pending": gettext_lazy("to do"),
    "in_progress": gettext_lazy("under way"),
    "done": gettext_lazy("done"),
}
_STEP_MARKS = {"pending": "☐", "in_progress": "▶", "done": "☑"}


@register.filter
def step_word(state: str) -> str:
    """A plan's step's state, for a screen reader."""
    return str(_STEP_WORDS.get(state, state))


@register.filter
def step_mark(state: str) -> str:
    return _STEP_MARKS.get(state, "☐")


@register.filter
def log_level_word(level: str) -> str:
    return str(LOG_LEVEL_WORDS.get(level, level))


# A line break and the indentation after it, in the template's own text.
_LAYOUT = re.compile(r"\n[ \t]*")


@register.tag
def joinlines(parser: Parser, token: Token) -> Node:
    """`{% joinlines %}…{% endjoinlines %}`: the block's template text loses its line breaks
    and the indentation after them, once, when the template is compiled; what variables and
    tags render is left as it is. Between inline elements a line break shows as a space, so
    a template written one element a line would otherwise show spaces its one-line form did
    not (and send bytes the tests compare); a space that is wanted is written inside a line."""
    nodelist = parser.parse(("endjoinlines",))
    parser.delete_first_token()
    for text in nodelist.get_nodes_by_type(TextNode):
        assert isinstance(text, TextNode)
        text.s = _LAYOUT.sub("", text.s)
    return _Joined(nodelist)


class _Joined(Node):
    child_nodelists = ("nodelist",)

    def __init__(self, nodelist: NodeList) -> None:
        self.nodelist = nodelist

    def render(self, context: Context) -> str:
        return self.nodelist.render(context)
