"""What a program is sent of a turn, event by event, by its settings for programs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from activity.preferences.feed_prefs import (
    FeedPrefs,
    PreferenceError,
    check_surfaces,
    surface_prefs,
)
from activity.presenting.program_frames import ProgramFrames
from activity.recording.events import from_json

WAITING = {"type": "status", "seq": 2, "icon": "✋", "message": "Waiting for approval",
           "state": "waiting", "tool": "send_email", "call_id": "c1"}  # fmt: skip
RUNNING = {"type": "status", "seq": 1, "icon": "🔍", "message": "Searching the knowledge base",
           "state": "in_progress", "tool": "search_documents", "call_id": "c0"}  # fmt: skip
DONE = {"type": "done", "message_id": "7", "state": "complete",
        "summary": {"icon": "✅", "text": "Done"}}  # fmt: skip


def program(**settings) -> ProgramFrames:
    """A program's frames by these settings (the rest its defaults)."""
    return ProgramFrames(surface_prefs("program", {}, {}, {"program": settings}), 7)


def sent(frames: ProgramFrames, *events: dict[str, Any]) -> list[dict[str, Any]]:
    return [frame for event in events for frame in frames.frames(from_json(event))]


def test_with_no_settings_every_event_passes_and_a_status_gains_its_fields():
    events: list[dict[str, Any]] = [
        {"type": "turn", "question_id": "6", "message_id": "7"},
        RUNNING,
        {"type": "tool_call", "seq": 2, "tool": "t", "call_id": "c0", "arguments": {"q": "x"}},
        {"type": "text", "content": "Hello "},
        {"type": "text", "content": "world"},
        DONE,
    ]
    (status, *rest) = [frame for frame in sent(program(), *events) if frame != events[0]]
    assert status == RUNNING | {
        "fields": {
            "icon": "🔍",
            "action": "Searching the knowledge base",
            "subject": "",
            "detail": "",
            "outcome": "in_progress",
            "duration_ms": None,
            "progress": None,
        }
    }
    assert rest == events[2:]
    assert sent(program(RENDER="plain"), *events) == events


def test_block_mode_sends_settled_blocks_and_the_rest_before_done():
    frames = program(MODE="block")
    texts = [{"type": "text", "content": part} for part in ("One para", "graph.\n\nTwo", " end")]
    assert sent(frames, *texts, DONE) == [
        {"type": "text", "content": "One paragraph.\n\n"},
        {"type": "text", "content": "Two end"},
        DONE,
    ]


def test_a_call_waiting_for_a_decision_is_sent_in_off_mode_and_without_tool_progress():
    assert sent(program(MODE="off", RENDER="plain"), RUNNING, WAITING) == [WAITING]
    assert sent(program(TOOL_PROGRESS=False, RENDER="plain"), RUNNING, WAITING) == [WAITING]


def test_the_label_comes_once_before_the_first_work_and_only_in_progress_mode():
    quiet = program(MODE="progress", LABEL="Busy", TOOL_PROGRESS=False, RENDER="plain")
    frames = sent(quiet, RUNNING, WAITING)
    assert frames == [{"type": "label", "text": "Busy"}, WAITING]
    assert sent(program(LABEL="Busy", RENDER="plain"), RUNNING) == [RUNNING]


def test_an_auto_label_is_one_of_the_pool_the_same_for_the_turn():
    prefs = surface_prefs("program", {}, {}, {"program": {"MODE": "progress", "LABEL": "auto"}})
    (label, _) = sent(ProgramFrames(prefs, 7), RUNNING)
    assert label["text"] == FeedPrefs(label="auto").label_for(7)


def test_a_cut_message_keeps_the_whole_text_beside_it_and_markup_stays_text():
    hostile = RUNNING | {"message": "<img src=x onerror=alert(1)> searching everything"}
    (frame,) = sent(program(LINE_WIDTH=20, RENDER="plain"), hostile)
    assert frame["message"] == "<img src=x onerror=…"  # text for the program, as written
    assert frame["full"] == hostile["message"]


def test_old_rows_are_the_pages_and_a_programs_choice_is_its_own():
    stored = {"MODE": "off", "program": {"MODE": "block"}}
    assert surface_prefs("page", {}, {}, stored).mode == "off"
    assert surface_prefs("program", {}, {}, stored).mode == "block"
    assert surface_prefs("program", {}, {}, {"MODE": "off"}).mode == "partial"
    site = {"program": {"DETAIL": "explain"}, "page": {"LINE_WIDTH": 60}}
    assert surface_prefs("program", {"DETAIL": "raw"}, site).detail == "explain"
    assert surface_prefs("page", {"LINE_WIDTH": 80}, site).line_width == 60


@pytest.mark.parametrize(
    ("surfaces", "message"),
    [
        ({"phone": {}}, "a surface is one of page, program, not 'phone'"),
        ({"program": ["MODE"]}, "program must be an object of feed settings"),
        ({"program": {"SHOW_REASONING": "off"}}, "SHOW_REASONING is set for the whole site"),
        ([], 'must be an object: {"page"'),
    ],
)
def test_surfaces_that_are_not_surfaces_are_refused(surfaces, message):
    with pytest.raises(PreferenceError, match=re.escape(message)):
        check_surfaces(surfaces)


def test_an_uncut_width_is_for_programs_only():
    assert surface_prefs("program", {}, {"program": {"LINE_WIDTH": 0}}).line_width == 0
    with pytest.raises(PreferenceError, match="LINE_WIDTH must be between 20 and 400 on the"):
        surface_prefs("page", {}, {"page": {"LINE_WIDTH": 0}})
