"""The agent's plan and an MCP server's log messages on every surface that shows, exports or
maps events: the live page, history, program frames, AG-UI, the UI message stream, the
audit, the admin and the traces. Pure: events in, what each surface makes of them out."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib import admin
from django.utils import timezone

from activity.admin import ActivityEventInline
from activity.auditing.audit import _counted
from activity.models import ActivityEvent, ActivityFeed
from activity.preferences.feed_prefs import FeedPrefs, surface_prefs
from activity.presenting.live import AddLine, LivePresenter, RemoveLine, ReplaceLine
from activity.presenting.presentation import summarize, visible_lines
from activity.presenting.program_frames import ProgramFrames
from activity.recording.chain import GENESIS
from activity.recording.events import (
    Plan,
    PlanStep,
    Status,
    ToolCall,
    ToolLog,
    ToolResult,
    from_json,
    to_json,
)
from activity.telemetry.spans import Options, trace_plan
from chat.api.standards.agui import AguiWire
from chat.api.standards.ui_stream import UiStreamWire
from chat.turns.wires import Resume
from tests.support.turn_events import PLAN_STEPS, every_kind, with_plan_and_log

FIRST = Plan(steps=(PlanStep("Search the surveys", "in_progress"),), call_id="p1", seq=1)
SECOND = Plan(
    steps=(PlanStep("Search the surveys", "done"), PlanStep("Compare", "in_progress")),
    call_id="p2",
    seq=5,
)
RUNNING = Status("🧩", "Comparing surveys", "in_progress", tool="s__compare", call_id="c1", seq=2)
CALL = ToolCall(tool="s__compare", call_id="c1", arguments={}, seq=3)


def log(level: str, data: str, seq: int) -> ToolLog:
    return ToolLog(call_id="c1", level=level, data=data, logger="cmp", server="s", seq=seq)


def test_a_plan_and_a_log_message_read_back_as_they_were_sent_and_stored():
    for event in (SECOND, log("error", "disk <full>", 4)):
        assert from_json(to_json(event)) == event
        row = ActivityEvent.from_event(ActivityFeed(pk=1), event)
        assert row.to_event() == event
        # Every column it is kept in is sealed: a changed step breaks the chain.
        sealed = row.seal(GENESIS).chain
        if isinstance(event, Plan):
            row.arguments["steps"][0]["state"] = "pending"
            assert row.seal(GENESIS).chain != sealed
    assert to_json(SECOND)["steps"] == [
        {"text": "Search the surveys", "state": "done"},
        {"text": "Compare", "state": "in_progress"},
    ]


@pytest.mark.parametrize(
    "data",
    [
        {"type": "plan", "steps": "all of them"},
        {"type": "plan", "steps": [{"text": "x", "state": "started"}]},
        {"type": "tool_log", "call_id": "c1", "level": "loud", "data": "x"},
    ],
)
def test_a_plan_or_log_message_that_is_not_one_is_refused_when_read(data):
    with pytest.raises(ValueError):
        from_json(data)


def test_a_received_plan_keeps_its_bounds():
    steps = [{"text": "y" * 300, "state": "pending"}] * 25
    plan = from_json({"type": "plan", "steps": steps})
    assert len(plan.steps) == 20 and all(len(step.text) == 200 for step in plan.steps)


def test_live_the_plan_is_one_line_replaced_in_place_by_each_update():
    presenter = LivePresenter(FeedPrefs(), turn_id=1)
    first = presenter.on_event(FIRST)
    second = presenter.on_event(SECOND)

    assert [type(op) for op in first] == [AddLine] and [type(op) for op in second] == [ReplaceLine]
    assert first[0].line.key == second[0].line.key == "plan"
    assert second[0].line.steps == SECOND.steps
    assert second[0].line.message == "Plan, 1 of 2 done: Compare"


def test_live_a_log_message_at_the_readers_level_redraws_its_calls_running_line():
    presenter = LivePresenter(FeedPrefs(), turn_id=1)  # the default level: warning
    presenter.on_event(RUNNING)
    assert presenter.on_event(log("info", "cache warm", 3)) == []
    (redrawn,) = presenter.on_event(log("error", "disk <full>", 4))

    assert isinstance(redrawn, ReplaceLine) and redrawn.line.key == "call-c1"
    assert [entry.data for entry in redrawn.line.logs] == ["disk <full>"]
    # A later progress report of the call keeps the log under its line.
    progress = presenter.on_event(Status("🧩", "Read 2 of 5", "in_progress", call_id="c1"))
    assert [entry.data for entry in progress[0].line.logs] == ["disk <full>"]

    chatty = LivePresenter(FeedPrefs(mcp_log_level="debug"), turn_id=1)
    chatty.on_event(RUNNING)
    assert chatty.on_event(log("debug", "cache warm", 3))[0].line.logs[0].level == "debug"


def test_live_without_tool_lines_neither_plan_nor_log_shows():
    presenter = LivePresenter(FeedPrefs(tool_progress=False), turn_id=1)
    presenter.on_event(RUNNING)
    assert presenter.on_event(FIRST) == [] and presenter.on_event(log("error", "x", 3)) == []


def test_history_shows_the_plan_once_where_it_first_stood_and_the_logs_at_the_readers_level():
    events = [FIRST, RUNNING, CALL, log("info", "warm", 4), log("error", "full", 5)]
    events += [SECOND, ToolResult(call_id="c1", ok=True, summary="ok", duration_ms=3, seq=7)]

    lines = visible_lines(events)
    assert [line.key for line in lines] == ["plan", "call-c1"]
    assert lines[0].steps == SECOND.steps
    assert [entry.data for entry in lines[1].logs] == ["full"]
    assert [e.level for e in visible_lines(events, log_level="debug")[1].logs] == ["info", "error"]
    # The plan stands over the steps: it takes no time of its own.
    now = timezone.now()
    times = [now + timedelta(seconds=second) for second in range(len(events))]
    assert visible_lines(events, times=times)[0].duration_ms is None


def test_planning_is_not_counted_as_a_tool_in_the_fold():
    plan_call = ToolCall(tool="update_plan", call_id="p1", arguments={}, seq=1)
    done = Plan(steps=(PlanStep("Search", "done"),), call_id="p1", seq=2)
    summary = summarize([plan_call, done], {})
    assert summary is not None and summary.text == "Plan: its one step is done"
    summary = summarize([plan_call, done, CALL], {})
    assert summary is not None and summary.text == "Used a tool"


def test_programs_get_the_plan_and_the_log_messages_at_their_level():
    site = surface_prefs("program", {}, {})
    assert site.mcp_log_level == "debug"  # a program hears everything unless it says
    frames = ProgramFrames(site, turn_id=1)
    assert frames.frames(SECOND) == [to_json(SECOND)]
    assert frames.frames(log("debug", "warm", 3))[0]["data"] == "warm"
    quieter = ProgramFrames(
        FeedPrefs.from_mappings(site.as_settings(), {"MCP_LOG_LEVEL": "error"}), 1
    )
    assert quieter.frames(log("warning", "warm", 3)) == []


def stream(wire, events):
    resume, frames = Resume(None), []
    for event in events:
        frames += resume.frames(wire.frames(from_json(event)))
    return frames


def test_agui_carries_the_plan_as_the_runs_state_and_a_log_message_as_a_custom_event():
    frames = stream(AguiWire("conv", "2"), with_plan_and_log(every_kind()))
    events = [json.loads(f.payload.model_dump_json(by_alias=True)) for f in frames]
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert snapshots[-1] == {"plan": {"steps": PLAN_STEPS, "call_id": "p2"}}
    (logged,) = [e["value"] for e in events if e.get("name") == "tool_log"]
    assert logged["data"] == "cache <cold>" and logged["level"] == "warning"


def test_the_ui_message_stream_keeps_one_plan_part_and_a_part_per_log_message():
    parts = [f.payload for f in stream(UiStreamWire("2"), with_plan_and_log(every_kind()))]
    plans = [p for p in parts if p["type"] == "data-plan"]
    # The AI SDK replaces a data part that comes again with the same id: one plan, updated.
    assert {p["id"] for p in plans} == {"plan"} and len(plans) == 2
    assert plans[-1]["data"]["steps"] == PLAN_STEPS
    (logged,) = [p for p in parts if p["type"] == "data-tool-log"]
    assert logged["data"]["call_id"] == "c1" and logged["data"]["logger"] == "search"


def test_the_audit_and_the_admin_read_both_without_counting_them_as_calls():
    assert _counted(SECOND) is None and _counted(log("error", "x", 3)) is None
    inline = ActivityEventInline(ActivityFeed, admin.site)
    plan_row = ActivityEvent.from_event(ActivityFeed(pk=1), SECOND)
    log_row = ActivityEvent.from_event(ActivityFeed(pk=1), log("error", "disk full", 3))
    assert inline.what(plan_row) == "plan: 1 of 2 steps done"
    assert inline.what(log_row) == "log error cmp: disk full"


def trace(content: bool):
    now = timezone.now()
    feed = ActivityFeed(pk=7, started_at=now, finished_at=now + timedelta(seconds=4))
    feed.state = ActivityFeed.State.COMPLETE
    rows = []
    for second, event in enumerate([FIRST, CALL, log("error", "disk <full>", 4), SECOND], 1):
        row = ActivityEvent.from_event(feed, event)
        row.created_at = now + timedelta(seconds=second)
        rows.append(row)
    return trace_plan(feed, [], rows, Options(content=content))


def test_a_trace_shows_the_plan_on_the_turn_and_a_log_on_its_tool_span_without_their_text():
    plan = trace(content=False)
    turn, tool = plan.root, plan.spans[1]
    assert [e.attributes for e in turn.events if e.name == "glassbox.plan"] == [
        {"glassbox.plan.steps": 1, "glassbox.plan.done": 0},
        {"glassbox.plan.steps": 2, "glassbox.plan.done": 1},
    ]
    (logged,) = [e for e in tool.events if e.name == "glassbox.mcp.log"]
    assert logged.attributes == {"glassbox.mcp.log.level": "error"}

    told = trace(content=True)
    (logged,) = [e for e in told.spans[1].events if e.name == "glassbox.mcp.log"]
    assert logged.attributes["glassbox.mcp.log.data"] == "disk <full>"
    assert "Compare" in told.root.events[-1].attributes["glassbox.plan.content"]


@pytest.mark.parametrize(
    ("language", "running", "finished", "step_word", "level"),
    [
        ("it", "Piano, 1 di 2 fatti: Compare", "Piano: tutti i 2 passi fatti", "fatto", "errore"),
        ("zh-hant", "計畫，已完成 1／2：Compare", "計畫：全部 2 個步驟已完成", "完成", "錯誤"),
    ],
)
def test_the_plans_line_and_the_log_levels_speak_the_feeds_language(
    language, running, finished, step_word, level
):
    from django.template.loader import render_to_string
    from django.utils import translation

    done = Plan(steps=tuple(PlanStep(s.text, "done") for s in SECOND.steps), seq=6)
    with translation.override(language):
        plan_line, call_line = visible_lines([SECOND, RUNNING, log("error", "x", 3)])
        assert plan_line.message == running
        assert visible_lines([done])[0].message == finished
        html = render_to_string("activity/_line.html", {"line": plan_line, "answer_id": 7})
        html += render_to_string("activity/_line.html", {"line": call_line, "answer_id": 7})
    assert f"{step_word}:</span>" in html and f'<span class="level">{level}</span>' in html


def test_in_a_draft_the_plan_stays_while_older_lines_scroll_away():
    presenter = LivePresenter(FeedPrefs(mode="progress", max_lines=3, label=""), turn_id=1)
    presenter.on_event(FIRST, now=0)
    ops = []
    for n in range(1, 5):
        status = Status("🔍", f"Search {n}", "in_progress", call_id=f"s{n}", seq=n + 10)
        ops += presenter.on_event(status, now=float(n))
    removed = [op.key for op in ops if isinstance(op, RemoveLine)]
    assert "plan" not in removed and list(presenter.shown) == ["plan", "call-s3", "call-s4"]
    (updated,) = presenter.on_event(SECOND, now=9)
    assert isinstance(updated, ReplaceLine) and updated.line.steps == SECOND.steps
