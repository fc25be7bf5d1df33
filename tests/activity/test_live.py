from __future__ import annotations

import pytest

from activity.preferences.feed_prefs import DEFAULT_LABELS, FeedPrefs, PreferenceError
from activity.presenting.live import (
    AddLine,
    AppendBlocks,
    LivePresenter,
    RemoveLine,
    ReplaceLine,
    SetTail,
)
from activity.recording.events import from_json
from tests.support.live_ops import line_of


def status(seq, icon, message, state="in_progress", tool="", call_id=""):
    return {
        "type": "status",
        "seq": seq,
        "icon": icon,
        "message": message,
        "state": state,
        "tool": tool,
        **({"call_id": call_id} if call_id else {}),
    }


SEARCH = [
    status(1, "🔍", "Searching the knowledge base…", tool="search_documents", call_id="c1"),
    status(2, "🔍", "Looking up salary tips", tool="search_documents", call_id="c1"),
    {"type": "tool_call", "seq": 3, "tool": "search_documents", "call_id": "c1",
     "arguments": {"feedback_to_user": "Looking up salary tips", "query": "salary"}},
    {"type": "tool_result", "seq": 4, "call_id": "c1", "ok": True, "summary": "3 documents",
     "duration_ms": 120},
    status(5, "📄", "Found 3 documents", "done", tool="search_documents", call_id="c1"),
    status(6, "✍️", "Writing the answer…"),
]  # fmt: skip


def play(presenter, events, now=0.0):
    ops = []
    for event in events:
        ops += presenter.on_event(from_json(event), now=now)
    return ops


def texts(ops):
    return [(type(op).__name__, getattr(getattr(op, "line", None), "message", None)) for op in ops]


def test_partial_mode_shows_each_line_at_once_and_streams_text():
    presenter = LivePresenter(FeedPrefs(), turn_id=1, started=0.0)
    ops = play(presenter, SEARCH)
    assert texts(ops) == [
        ("AddLine", "Searching the knowledge base…"),
        ("ReplaceLine", "Looking up salary tips"),
        ("AddLine", "Found 3 documents"),
        ("AddLine", "Writing the answer…"),
    ]
    assert presenter.on_event(from_json({"type": "text", "content": "Hi"})) == [SetTail("Hi")]


def text(presenter, content):
    return presenter.on_event(from_json({"type": "text", "content": content}))


def test_partial_mode_renders_settled_blocks_and_shows_the_tail_as_text():
    presenter = LivePresenter(FeedPrefs(), turn_id=1)
    assert text(presenter, "**Salary") == [SetTail("**Salary")]
    assert text(presenter, "**\n\n- one\n\n- tw") == [
        AppendBlocks("**Salary**\n\n"),
        SetTail("- one\n\n- tw"),  # a loose list is one block until something follows it
    ]
    assert text(presenter, "o\n\n```\ncode\n\nmore") == [
        AppendBlocks("- one\n\n- two\n\n"),
        SetTail("```\ncode\n\nmore"),  # an open fence holds its blank lines
    ]
    assert presenter.finish() == [AppendBlocks("```\ncode\n\nmore"), SetTail("")]
    assert presenter.finish() == []


def test_block_mode_sends_a_block_once_it_is_settled():
    presenter = LivePresenter(FeedPrefs(mode="block"), turn_id=1)
    assert text(presenter, "First para") == []
    assert text(presenter, "graph.\n\nSecond") == [
        AppendBlocks("First paragraph.\n\n"),
        SetTail(""),
    ]
    assert text(presenter, "x" * 1300) == []
    assert presenter.finish() == [AppendBlocks("Second" + "x" * 1300), SetTail("")]


def test_off_mode_shows_nothing_live():
    presenter = LivePresenter(FeedPrefs(mode="off"), turn_id=1)
    assert play(presenter, [*SEARCH, {"type": "text", "content": "Hi"}]) == []
    assert presenter.tick(now=100) == []


ASKS_FIRST = [
    status(1, "📧", "Sending an email to advisor@example.com", tool="send_email", call_id="c3"),
    {"type": "tool_call", "seq": 2, "tool": "send_email", "call_id": "c3",
     "arguments": {"to": "advisor@example.com"}},
    status(3, "⏸", "Sending an email to advisor@example.com — waiting for your approval",
           state="waiting", tool="send_email", call_id="c3"),
]  # fmt: skip
APPROVED = {"type": "decision", "seq": 4, "call_id": "c3", "tool": "send_email",
            "decision": "approve", "by": "alice"}  # fmt: skip


@pytest.mark.parametrize(
    "prefs",
    [
        FeedPrefs(mode="off"),
        FeedPrefs(mode="progress", label="Busy", show_after=60),
        FeedPrefs(mode="progress", label="", tool_progress=False, show_after=60),
        FeedPrefs(mode="partial", tool_progress=False),
    ],
    ids=["off", "progress", "progress-without-tool-lines", "partial-without-tool-lines"],
)
def test_a_call_waiting_for_the_user_shows_at_once_in_every_mode(prefs):
    presenter = LivePresenter(prefs, turn_id=1, started=0.0)
    ops = play(presenter, ASKS_FIRST, now=0.1)
    waiting = [op for op in ops if line_of(op).state == "waiting"]
    assert [line_of(op).message for op in waiting] == [ASKS_FIRST[-1]["message"]]
    assert line_of(waiting[0]).key in presenter.shown
    decided = presenter.on_event(from_json(APPROVED), now=0.2)
    assert [(type(op).__name__, line_of(op).icon) for op in decided] == [("ReplaceLine", "✅")]


def test_progress_mode_shows_the_draft_at_the_second_work_event_and_no_text():
    presenter = LivePresenter(FeedPrefs(mode="progress", labels=("Sifting...",)), 1, started=0)
    first = play(presenter, SEARCH[:2])
    assert first == []  # one work event (the feedback replaced its own line), under 5 s
    ops = play(presenter, SEARCH[2:5], now=1.0)
    assert texts(ops) == [
        ("AddLine", "Sifting..."),
        ("AddLine", "Looking up salary tips"),
        ("AddLine", "Found 3 documents"),
    ]
    assert presenter.on_event(from_json({"type": "text", "content": "answer"})) == []


def test_progress_mode_shows_the_draft_after_five_seconds_of_work():
    presenter = LivePresenter(FeedPrefs(mode="progress", label="Investigating"), 1, started=0)
    assert play(presenter, SEARCH[:1], now=1.0) == []
    assert presenter.tick(now=4.9) == []
    assert texts(presenter.tick(now=5.0)) == [
        ("AddLine", "Investigating"),
        ("AddLine", "Searching the knowledge base…"),
    ]


def test_a_direct_answer_never_shows_a_draft():
    presenter = LivePresenter(FeedPrefs(mode="progress"), 1, started=0)
    assert presenter.on_event(from_json({"type": "text", "content": "Hello"}), now=60) == []
    assert presenter.tick(now=60) == []


def test_older_lines_scroll_away_the_label_first():
    presenter = LivePresenter(FeedPrefs(mode="progress", max_lines=2, label="Working"), 1, 0)
    ops = play(presenter, SEARCH, now=1.0)
    removed = [op.key for op in ops if isinstance(op, RemoveLine)]
    assert removed == ["label", "call-c1"]
    assert list(presenter.shown) == ["seq-5", "seq-6"]


def test_no_label_shows_only_the_lines():
    presenter = LivePresenter(FeedPrefs(mode="progress", label=""), 1, started=0)
    ops = play(presenter, SEARCH, now=1.0)
    assert "label" not in [line_of(op).key for op in ops if isinstance(op, AddLine)]


def test_without_tool_progress_only_the_label_shows_until_the_answer():
    presenter = LivePresenter(FeedPrefs(mode="progress", label="Busy", tool_progress=False), 1, 0)
    ops = play(presenter, SEARCH, now=1.0)
    assert texts(ops) == [("AddLine", "Busy")]
    done = presenter.on_event(from_json(status(9, "✅", "Done", state="done")), now=2.0)
    fallback = presenter.on_event(
        from_json(status(10, "🔄", "Answering from general knowledge", state="done"))
    )
    assert done == [] and fallback == []


def test_raw_detail_adds_the_tools_arguments_to_its_line():
    presenter = LivePresenter(FeedPrefs(detail="raw"), 1)
    ops = play(presenter, SEARCH[:3])
    assert ops[-1] == ReplaceLine(line_of(ops[-1]))
    assert line_of(ops[-1]).message == "Looking up salary tips, query: salary"


def test_a_long_raw_detail_is_shortened_in_its_middle_keeping_the_line_start():
    presenter = LivePresenter(FeedPrefs(detail="raw", line_width=70), 1)
    play(presenter, SEARCH[:2])
    arguments = {"feedback_to_user": "Looking up salary tips",
                 "query": "salary bands for senior engineers in Milan in 2026"}  # fmt: skip
    (op,) = presenter.on_event(from_json(
        {"type": "tool_call", "seq": 3, "tool": "search_documents", "call_id": "c1",
         "arguments": arguments}
    ))  # fmt: skip
    assert (
        line_of(op).message
        == "Looking up salary tips, query: salary bands for…neers in Milan in 2026"
    )
    assert len(line_of(op).message) == 70
    assert line_of(op).full == "Looking up salary tips, query: " + arguments["query"]


def test_a_long_line_is_shortened_in_its_middle_keeping_its_start_and_its_outcome():
    presenter = LivePresenter(FeedPrefs(line_width=60), 1)
    done = "Compared the salary surveys " + "of 2026 in Milan, " * 6 + "median 52,000 EUR"
    (op,) = presenter.on_event(from_json(status(1, "🧩", done)))
    assert len(line_of(op).message) == 60
    assert line_of(op).message.startswith("Compared the salary surveys")
    assert line_of(op).message.endswith("median 52,000 EUR")
    assert line_of(op).full == done


def test_live_lines_are_cut_at_the_readers_width_so_an_edit_in_place_keeps_one_line():
    """Seed 001: "Cut lines at" holds live too, for feedback as for a tool's own lines."""
    presenter = LivePresenter(FeedPrefs(line_width=20), 1)
    feedback = "Sto cercando " + "x" * 87 + "..."
    (op,) = presenter.on_event(from_json(status(1, "🔍", feedback)))
    assert len(line_of(op).message) == 20 and line_of(op).message.startswith("Sto cerca")
    assert line_of(op).full == feedback


def test_auto_labels_come_from_the_pool_and_stay_put_for_a_turn():
    prefs = FeedPrefs()
    assert prefs.label_for(7) in DEFAULT_LABELS
    assert prefs.label_for(7) == prefs.label_for(7)
    assert FeedPrefs(labels=("Checking",)).label_for(123) == "Checking"


@pytest.mark.parametrize(
    ("layer", "problem"),
    [
        ({"MODE": "loud"}, "MODE must be one of"),
        ({"DETAIL": "verbose"}, "DETAIL must be explain or raw"),
        ({"MAX_LINES": 0}, "MAX_LINES must be between 1 and 50"),
        ({"LINE_WIDTH": 5}, "LINE_WIDTH must be 0 \\(uncut\\) or between 20 and 400"),
        ({"SHOW_AFTER": -1}, "SHOW_AFTER must be zero or more"),
        ({"LABELS": []}, "LABELS must name at least one"),
        ({"COLOUR": "red"}, "unknown feed setting 'COLOUR'"),
    ],
)
def test_bad_feed_settings_are_refused_clearly(layer, problem):
    with pytest.raises(PreferenceError, match=problem):
        FeedPrefs.from_mappings(layer)


def test_user_overrides_win_over_the_settings():
    prefs = FeedPrefs.from_mappings(
        {"MODE": "partial", "MAX_LINES": 6, "LABELS": None}, {"MODE": "progress", "LABEL": False}
    )
    assert (prefs.mode, prefs.max_lines, prefs.label) == ("progress", 6, "")
    assert prefs.labels == tuple(DEFAULT_LABELS)
