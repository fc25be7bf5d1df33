from __future__ import annotations

from activity.events import Status, ToolCall, ToolResult
from activity.presentation import Summary, ToolLabels, summarize, visible_lines

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
    events = [
        ToolCall("search_documents", "c1", {}, seq=1),
        ToolResult("c1", True, "", 1, tool="search_documents", seq=2),
        ToolCall("search_documents", "c2", {}, seq=3),
        ToolResult("c2", True, "", 1, tool="search_documents", seq=4),
        ToolCall("weather", "c3", {}, seq=5),
        ToolResult("c3", True, "", 1, tool="weather", seq=6),
    ]
    assert summarize(events, LABELS) == Summary("🛠️", "Used 3 tools")


def test_a_direct_answer_has_no_summary_and_no_lines():
    assert summarize([], LABELS) is None
    assert visible_lines([]) == []


def test_a_turn_that_failed_without_tools_folds_into_its_last_line():
    events = [Status("❌", "Could not reach the model provider", "failed", seq=1)]
    assert summarize(events, LABELS) == Summary("❌", "Could not reach the model provider")
