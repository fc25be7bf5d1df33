from __future__ import annotations

from activity.presenting.presentation import (
    UNFINISHED,
    Summary,
    ToolLabels,
    summarize,
    visible_lines,
)
from activity.recording.events import (
    Decision,
    DecisionKind,
    RecordedEvent,
    Status,
    ToolCall,
    ToolResult,
)
from chat.agent.tools import truncate_feedback

LABELS = {
    "search_documents": ToolLabels(
        "📄", "Searched the knowledge base", "Knowledge base query failed"
    )
}


def search_turn(ok: bool = True):
    return [
        Status("🔍", "Searching the knowledge base…", "in_progress", "search_documents", "c1", 1),
        Status("🔍", "Looking up salaries", "in_progress", "search_documents", "c1", 2),
        ToolCall("search_documents", "c1", {"query": "salary"}, seq=3),
        ToolResult("c1", ok, "3 documents", 120, tool="search_documents", seq=4),
        Status("📄", "Found 3 documents", "done", "search_documents", "c1", 5),
        Status("✍️", "Writing the answer…", "in_progress", seq=6),
        Status("✅", "Done", "done", seq=7),
    ]


def test_feedback_replaces_the_working_line_where_it_stands():
    lines = visible_lines(search_turn())
    assert [(line.icon, line.message) for line in lines] == [
        ("🔍", "Looking up salaries"),
        ("📄", "Found 3 documents"),
        ("✍️", "Writing the answer…"),
        ("✅", "Done"),
    ]


def test_a_search_folds_into_searched_the_knowledge_base():
    assert summarize(search_turn(), LABELS) == Summary("📄", "Searched the knowledge base")


def test_a_failed_tool_folds_into_a_warning():
    assert summarize(search_turn(ok=False), LABELS) == Summary("⚠️", "Knowledge base query failed")


def test_several_tool_calls_fold_into_a_count():
    events: list[RecordedEvent] = [
        ToolCall("search_documents", "c1", {}, seq=1),
        ToolResult("c1", True, "", 1, tool="search_documents", seq=2),
        ToolCall("search_documents", "c2", {}, seq=3),
        ToolResult("c2", True, "", 1, tool="search_documents", seq=4),
        ToolCall("weather", "c3", {}, seq=5),
        ToolResult("c3", True, "", 1, tool="weather", seq=6),
    ]
    assert summarize(events, LABELS) == Summary("🛠️", "Used 3 tools")


def test_one_tool_called_twice_folds_into_that_tool_twice():
    events: list[RecordedEvent] = [
        ToolCall("search_documents", "c1", {}, seq=1),
        ToolResult("c1", True, "", 1, tool="search_documents", seq=2),
        ToolCall("search_documents", "c2", {}, seq=3),
        ToolResult("c2", True, "", 1, tool="search_documents", seq=4),
    ]
    assert summarize(events, LABELS) == Summary("📄", "Searched the knowledge base twice")
    more = [*events, ToolCall("search_documents", "c3", {}, seq=5)]
    assert summarize(more, LABELS) == Summary("📄", "Searched the knowledge base 3 times")


def test_a_stopped_turn_folds_into_what_happened_to_it():
    # Its ⏹ line is done, not failed: the end its owner chose, which its caller names.
    stopped = [*search_turn()[:5], Status("⏹", "Stopped", "done", seq=6)]
    assert summarize(stopped, LABELS, stopped=True) == Summary("⏹", "Stopped")
    # A finished turn's last done line (✅) is no end of that kind: it folds into its tools.
    assert summarize(stopped, LABELS) == summarize(search_turn()[:5], LABELS)


def test_a_turn_that_broke_off_after_its_tools_folds_into_its_failed_line():
    broke = [*search_turn()[:5], Status("⚠️", "Interrupted: the server stopped", "failed", seq=6)]
    assert summarize(broke, LABELS) == Summary("⚠️", "Interrupted: the server stopped")


def test_a_direct_answer_has_no_summary_and_no_lines():
    assert summarize([], LABELS) is None
    assert visible_lines([]) == []


def test_a_turn_that_failed_without_tools_folds_into_its_last_line():
    events = [Status("❌", "Could not reach the model provider", "failed", seq=1)]
    assert summarize(events, LABELS) == Summary("❌", "Could not reach the model provider")


def test_history_lines_carry_each_steps_duration():
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    offsets = [0, 0.4, 0.5, 0.7, 0.7, 0.8, 2.3]
    times = [start + timedelta(seconds=s) for s in offsets]
    lines = visible_lines(search_turn(), times=times, finished_at=start + timedelta(seconds=2.5))
    assert [(line.message, line.duration_ms) for line in lines] == [
        ("Looking up salaries", 700),  # from the first line of the call to the next line
        ("Found 3 documents", 120),  # the tool's own run time
        ("Writing the answer…", 1500),
        ("Done", 2500),  # the whole turn
    ]


def test_raw_detail_shows_the_arguments_in_history_too():
    lines = visible_lines(search_turn(), detail="raw")
    assert lines[0].message == "Looking up salaries, query: salary"


def test_a_line_within_the_width_is_never_cut():
    lines = visible_lines(search_turn(), width=20)
    assert lines[0].message == "Looking up salaries"
    assert lines[0].full == ""


def test_a_line_is_cut_at_the_readers_width_and_keeps_its_whole_text():
    """Seed 001: the Preferences' "Cut lines at" cuts, so a line updated in place keeps its
    one line; the whole text is the tooltip. Programs (width 0) get it whole."""
    feedback = truncate_feedback("Cerco " + "consigli per il colloquio di lavoro " * 5)
    events = [Status("🔍", feedback, "in_progress", "search_documents", "c1", 1)]
    for width in (20, 80):
        (line,) = visible_lines(events, width=width)
        assert len(line.message) == width and "…" in line.message
        assert line.message.startswith("Cerco cons") and line.full == feedback
    (line,) = visible_lines(events, width=0)
    assert (line.message, line.full) == (feedback, "")


def test_a_long_calculation_keeps_its_result_and_shortens_its_expression():
    expression = " + ".join(str(n) for n in range(1, 41))
    done = f"Calculated {expression} = 820"
    events = [Status("🧮", done, "done", "calculator", "c1", 1)]
    (line,) = visible_lines(events)
    assert len(line.message) == 80
    assert line.message.startswith("Calculated 1 + 2 + 3")
    assert line.message.endswith("+ 39 + 40 = 820")
    assert "…" in line.message
    assert line.full == done


def test_a_raw_detail_shares_the_width_with_a_long_feedback():
    feedback = "Looking up how to prepare a job interview for a senior engineering role in Milan"
    path = "/srv/knowledge/interviews/senior-engineering/milan/2026/preparation-guide.md"
    events: list[RecordedEvent] = [
        Status("🔍", feedback, "in_progress", "search_documents", "c1", 1),
        ToolCall("search_documents", "c1", {"path": path}, seq=2),
    ]
    (line,) = visible_lines(events, detail="raw")
    assert len(line.message) <= 80
    assert line.message.startswith("Looking up how") and line.message.endswith("guide.md")
    assert ", path: /srv" in line.message and line.detail.startswith("path: /srv")
    assert line.full == f"{feedback}, path: {path}"


def test_an_mcp_calls_line_ends_on_its_last_progress_text_in_history_as_it_did_live():
    events: list[RecordedEvent] = [
        Status("🧩", "Reading the surveys", "in_progress", "surveys__read", "c1", 1),
        ToolCall("surveys__read", "c1", {}, seq=2),
        ToolResult("c1", True, "5 surveys", 900, tool="surveys__read", seq=3, progress=5,
                   total=5, progress_message="Read survey 5 of 5…", progress_count=5),
        Status("✅", "Read 5 surveys", "done", "surveys__read", "c1", 4),
    ]  # fmt: skip
    lines = visible_lines(events)
    assert [line.message for line in lines] == ["Read survey 5 of 5…", "Read 5 surveys"]


def test_a_cut_turn_marks_the_steps_it_never_finished_neither_done_nor_failed():
    events: list[RecordedEvent] = [
        Status("🔍", "Searching", "in_progress", "search_documents", "c1", 1),
        ToolCall("search_documents", "c1", {}, seq=2),
        ToolResult("c1", True, "3 documents", 100, tool="search_documents", seq=3),
        Status("📄", "Found 3 documents", "done", "search_documents", "c1", 4),
        Status("✍️", "Writing the answer…", "in_progress", seq=5),
    ]
    finished = visible_lines(events)
    cut = visible_lines(events, cut=True)
    assert [line.state for line in finished] == ["in_progress", "done", "in_progress"]
    assert [line.state for line in cut] == ["in_progress", "done", UNFINISHED]


def denied_email(decision: DecisionKind = "deny") -> list[RecordedEvent]:
    return [
        Status("📧", "Writing an email…", "in_progress", "send_email", "e1", 1),
        ToolCall("send_email", "e1", {"to": "a@example.com"}, seq=2),
        Status("⏸", "Writing an email — waiting for your approval", "waiting", "send_email",
               "e1", 3),
        Decision("e1", "send_email", decision, by="alice", seq=4),
        ToolResult("e1", False, "The user denied this call", 0, tool="send_email", seq=5),
        Status("🔄", "Answering without it", "done", "fallback", "e1-fallback", 6),
    ]  # fmt: skip


def test_a_denied_call_folds_into_denied_not_into_a_tool_failure():
    labels = {"send_email": ToolLabels("📧", "Sent an email", "Email not sent")}
    assert summarize(denied_email(), labels) == Summary("🚫", "Denied")
    assert summarize(denied_email("timeout"), labels) == Summary("⌛", "Not approved in time")
    # A call approved that then failed is a failure, whatever was decided before it.
    approved = [*denied_email("approve")]
    assert summarize(approved, labels) == Summary("⚠️", "Email not sent")


def test_a_failed_calls_running_line_reads_failed_in_history_not_done():
    lines = visible_lines(search_turn(ok=False))
    assert (lines[0].icon, lines[0].state) == ("🔍", "failed")
    assert visible_lines(search_turn())[0].state == "in_progress"
