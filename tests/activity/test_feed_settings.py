"""The feed's settings as the seed writes them, and a clear stop when one is wrong."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.live import LivePresenter
from activity.recording.events import from_json
from tests.support.live_ops import line_of
from tests.support.mcp import ROOT


@pytest.mark.parametrize("value", ["false", "False", "off"])
def test_label_false_hides_the_label(value):
    prefs = FeedPrefs.from_mappings({"MODE": "progress", "LABEL": value, "SHOW_AFTER": 0})
    presenter = LivePresenter(prefs, 1, 0)
    ops = presenter.on_event(from_json(
        {"type": "status", "seq": 1, "icon": "🔍", "message": "Searching…",
         "state": "in_progress", "tool": "search_documents", "call_id": "c1"}
    ))  # fmt: skip
    assert [line_of(op).message for op in ops] == ["Searching…"]  # no label line before it


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("GLASSBOX_FEED_MODE", "loud", "GLASSBOX_FEED_MODE: MODE must be one of partial, block"),
        ("GLASSBOX_FEED_MAX_LINES", "0", "GLASSBOX_FEED_MAX_LINES: MAX_LINES must be between 1"),
        ("GLASSBOX_FEED_DETAIL", "all", "GLASSBOX_FEED_DETAIL: DETAIL must be explain or raw"),
        ("GLASSBOX_SHOW_REASONING", "maybe", "GLASSBOX_SHOW_REASONING: SHOW_REASONING must be"),
        ("GLASSBOX_FEED_LINE_WIDTH", "wide", "GLASSBOX_FEED_LINE_WIDTH must be an integer"),
        ("GLASSBOX_PRICES", '{"m": {"prompt": 1}}', "GLASSBOX_PRICES: 'm': give 'prompt' and"),
        ("GLASSBOX_APPROVAL", '{"send_email": "yes"}', "GLASSBOX_APPROVAL: expected an object"),
        (
            "GLASSBOX_FEED_SURFACES",
            '{"program": {"MODE": "loud"}}',
            "GLASSBOX_FEED_SURFACES: program: MODE must be one of partial, block",
        ),
        ("GLASSBOX_FEED_SURFACES", "{page", "GLASSBOX_FEED_SURFACES must be JSON"),
    ],
)
@pytest.mark.own_site  # start-up stops before any database is opened
def test_an_invalid_setting_stops_start_up_naming_it(variable, value, message):
    run = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, variable: value},
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0
    assert message in run.stderr
