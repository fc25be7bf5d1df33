"""Events of every kind with every field set, as a row and a wire form are made of them: the
stored format (hashes, JSON) is pinned on these."""

from __future__ import annotations

from datetime import UTC, datetime

from activity.recording.events import (
    Decision,
    Done,
    Error,
    Link,
    Plan,
    PlanStep,
    Status,
    TextDelta,
    ToolCall,
    ToolLog,
    ToolResult,
    TurnStarted,
    WireEvent,
)

AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

RECORDED = (
    Status(
        "🔍", "Searching the knowledge base…", "in_progress", tool="search", call_id="c1", seq=1
    ),
    ToolCall("search", "c1", {"query": "salary", "limit": 3.0, "deep": [1, 2.5]}, seq=2),
    ToolResult(
        "c1",
        True,
        "3 documents",
        212,
        tool="search",
        error="Traceback",
        content="the documents",
        server="docs",
        progress=2.0,
        total=5.0,
        progress_message="Compared survey 2 of 5",
        progress_count=2,
        structured={"hits": 3, "score": 0.5},
        links=(Link("https://example.org/a", "A", "text/html"),),
        seq=3,
    ),
    ToolResult("c2", False, "failed", 9, seq=4),
    Decision("c3", "send_email", "deny", by="alice", reason="Not now", waited_ms=1500, seq=5),
    Status("⏸", "Waiting", "waiting", call_id="c3", seq=6),
    Plan((PlanStep("Search", "done"), PlanStep("Compare", "in_progress")), call_id="p1", seq=7),
    ToolLog("c1", "warning", "cache cold", logger="db", server="docs", seq=8),
)

WIRE: tuple[WireEvent, ...] = (
    *RECORDED,
    Status("🧩", "Compared 2 of 5", "in_progress", call_id="c1", progress=2, total=5),
    Status("🧩", "Compared 2", "in_progress", call_id="c1", progress=2.5),
    TextDelta("According to"),
    Done("7", "complete", "📄", "Searched the knowledge base"),
    TurnStarted("1", "2"),
    TurnStarted("1", "3", replaces="2"),
    Error("Too many questions"),
)
