"""The feed's templates are activity's own: written one element a line, they render each line
of a feed as one line of HTML, with the spaces a reader sees and nothing of chat."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from django.template import engines
from django.template.loader import render_to_string

from tests.support.mcp import ROOT

TEMPLATES = ROOT / "templates" / "activity"


def a_line(**fields) -> SimpleNamespace:
    shown = {
        "key": "call_1", "state": "waiting", "full": "", "icon": "📧", "message": "Sending <b>",
        "links": [], "thinking": False, "progress": None, "total": None, "percent": None,
        "call_id": "call_1", "duration_ms": 1200, "is_reasoning": False, "reasoning": "",
    }  # fmt: skip
    return SimpleNamespace(**{**shown, **fields})


def test_a_waiting_line_is_one_line_of_html_with_its_spaces_and_no_buttons():
    """The decision is taken on the call's card, under what it approves (chat's template)."""
    html = render_to_string(
        "activity/_line.html", {"line": a_line(), "answer_id": 7, "live": True}
    )
    assert html == (
        '<li id="line-7-call_1" class="line state-waiting">'
        '<span class="icon" aria-hidden="true">📧</span>'
        ' <span class="text">Sending &lt;b&gt;</span></li>\n'
    )


def test_a_finished_lines_reasoning_keeps_its_own_line_breaks():
    line = a_line(state="done", is_reasoning=True, reasoning="first\nsecond", full="a\nb")
    html = render_to_string("activity/_line.html", {"line": line, "answer_id": 7, "live": False})
    assert ' title="a\nb"' in html  # what a variable renders is left as it is
    assert "<p>first<br>second</p>" in html
    assert html.count("\n") == 3  # the title's, the focused text's, and the file's last


def test_joinlines_takes_out_the_layout_and_keeps_spaces_written_inside_a_line():
    template = engines["django"].from_string(
        "{% load activity_feed %}{% joinlines %}\n  <b>{{ a }}</b>\n"
        "  {% if a %} <i>x</i>{% endif %}\n  {# a space #} <u>y</u>\n{% endjoinlines %}"
    )
    assert template.render({"a": "1\n2"}) == "<b>1\n2</b> <i>x</i> <u>y</u>"


def test_the_feed_templates_load_no_tags_and_reverse_no_urls_of_chat():
    for template in TEMPLATES.glob("*.html"):
        source = Path(template).read_text()
        loaded = re.findall(r"{% load ([^%]+) %}", source)
        assert all("glassbox" not in libraries.split() for libraries in loaded), template
        assert "'chat:" not in source and '"chat:' not in source, template
