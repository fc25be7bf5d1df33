"""The mappings of a turn's JSON events to AG-UI and to the UI message stream, and resuming
them from any frame: pure, no server."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import EventType

from activity.recording.events import from_json
from chat.api.standards.agui import AguiWire
from chat.api.standards.ui_stream import UiStreamWire
from chat.turns.wires import BadEventId, Cursor, Frame, Resume
from tests.support.standard_streams import rebuild_agui, rebuild_ui_stream
from tests.support.turn_events import ANSWER, ARGUMENTS, every_kind


def agui_wire():
    return AguiWire(thread_id="conv", run_id="2")


def ui_wire():
    return UiStreamWire(message_id="2")


def stream(wire, events, after=None, waits=False) -> list[Frame]:
    resume = Resume(after, wire.rebuild)
    frames: list[Frame] = []
    for event in events:
        frames += resume.frames(wire.frames(from_json(event)))
        if waits and event.get("state") == "waiting":
            frames += resume.frames(wire.interrupt(from_json(event)))
            break
    return frames


def payloads(frames):
    return [json.loads(f.payload.model_dump_json(by_alias=True)) for f in frames]


def chunks(frames):
    return [f.payload for f in frames] + ["[DONE]"]


def test_every_event_kind_has_its_agui_event():
    events = payloads(stream(agui_wire(), every_kind()))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert {k.value for k in EventType} >= set(kinds)
    assert set(kinds) >= {
        "STEP_STARTED", "STEP_FINISHED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "CUSTOM",
    }  # fmt: skip
    customs = [e["name"] for e in events if e["type"] == "CUSTOM"]
    assert customs == ["status", "feedback", "progress", "decision"]
    rebuilt = rebuild_agui([events])
    assert rebuilt.text == ANSWER
    assert rebuilt.arguments == {"c1": ARGUMENTS, "c2": {"to": "<b>boss</b>"}}
    assert rebuilt.results["c2"]["ok"] is False
    # The reasoning line is a step, never a tool call.
    assert "r1" not in rebuilt.arguments
    assert {"type": "STEP_STARTED", "stepName": "r1"}.items() <= next(
        e for e in events if e.get("stepName") == "r1"
    ).items()


def test_every_event_kind_has_its_ui_message_chunk():
    parts = chunks(stream(ui_wire(), every_kind()))
    kinds = [p["type"] for p in parts[:-1]]
    assert kinds[0] == "start" and kinds[-1] == "finish" and parts[-1] == "[DONE]"
    assert set(kinds) == {
        "start", "tool-input-start", "tool-input-available", "tool-output-available",
        "tool-output-error", "data-status", "data-feedback", "data-progress", "data-decision",
        "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish",
    }  # fmt: skip
    assert parts[-2] == {"type": "finish", "finishReason": "stop"}
    rebuilt = rebuild_ui_stream([parts])
    assert rebuilt.text == ANSWER
    assert rebuilt.arguments == {"c1": ARGUMENTS, "c2": {"to": "<b>boss</b>"}}
    assert rebuilt.results == {"c1": {"ok": True, "summary": "3 documents", "duration_ms": 12}}


@pytest.mark.parametrize(
    ("end", "last"),
    [
        ("complete", {"type": "RUN_FINISHED", "threadId": "conv", "runId": "2"}),
        ("stopped", {"type": "RUN_FINISHED", "threadId": "conv", "runId": "2",
                     "outcome": {"type": "cancelled"}}),
        ("failed", {"type": "RUN_ERROR", "message": "The model stopped answering.",
                    "code": "failed"}),
        ("interrupted", {"type": "RUN_ERROR", "message": "The model stopped answering.",
                         "code": "interrupted"}),
    ],
)  # fmt: skip
def test_each_end_of_a_turn_ends_the_agui_run_so(end, last):
    events = payloads(stream(agui_wire(), every_kind(end)))
    assert events[-1] == last
    assert rebuild_agui([events]).ends == [last["type"]]


@pytest.mark.parametrize(
    ("end", "last"),
    [
        ("complete", [{"type": "finish", "finishReason": "stop"}]),
        ("stopped", [{"type": "abort", "reason": "Stopped by its user."}]),
        ("failed", [{"type": "error", "errorText": "The model stopped answering."},
                    {"type": "finish", "finishReason": "error"}]),
        ("interrupted", [{"type": "error", "errorText": "The model stopped answering."},
                         {"type": "finish", "finishReason": "error"}]),
    ],
)  # fmt: skip
def test_each_end_of_a_turn_ends_the_ui_message_stream_so(end, last):
    parts = chunks(stream(ui_wire(), every_kind(end)))
    assert parts[-1 - len(last) : -1] == last


def test_a_stopped_turn_ends_its_agui_run_cancelled_with_its_line_a_finished_step():
    events = payloads(stream(agui_wire(), every_kind("stopped")))
    assert "RUN_ERROR" not in [e["type"] for e in events]
    stop = [e for e in events if e.get("stepName") == "status-12"]
    assert [e["type"] for e in stop] == ["STEP_STARTED", "STEP_FINISHED"]
    assert stop[1]["rawEvent"]["state"] == "done"
    assert events[-1]["outcome"] == {"type": "cancelled"}
    rebuilt = rebuild_agui([events])
    assert rebuilt.text == ANSWER and rebuilt.ends == ["RUN_FINISHED"]


def test_a_stopped_turn_finishes_its_ui_message_stream_without_an_error_part():
    parts = chunks(stream(ui_wire(), every_kind("stopped")))
    assert "error" not in [p["type"] for p in parts[:-1]]
    stop = next(p for p in parts[:-1] if p.get("id") == "status-12")
    assert stop["type"] == "data-status" and stop["data"]["state"] == "done"
    assert parts[-2] == {"type": "abort", "reason": "Stopped by its user."}
    assert "finish" not in [p["type"] for p in parts[:-1]]
    rebuilt = rebuild_ui_stream([parts])
    assert rebuilt.text == ANSWER and rebuilt.ends == ["abort"]


def test_an_interrupted_turn_without_an_error_event_says_the_server_stopped():
    """A turn whose process died ends with its ⚠️ line and `done`: no `error` event."""
    events = [e for e in every_kind("interrupted") if e["type"] != "error"]
    run = payloads(stream(agui_wire(), events))
    parts = chunks(stream(ui_wire(), events))

    said = "The server stopped while answering."
    assert run[-1] == {"type": "RUN_ERROR", "message": said, "code": "interrupted"}
    assert parts[-3:-1] == [
        {"type": "error", "errorText": said}, {"type": "finish", "finishReason": "error"},
    ]  # fmt: skip


def test_a_turn_that_waits_ends_its_agui_run_with_an_interrupt():
    events = payloads(stream(agui_wire(), every_kind(), waits=True))
    assert events[-1]["outcome"] == {
        "type": "interrupt",
        "interrupts": [
            {"id": "c2", "reason": "approval", "message": "Send the email — waiting",
             "toolCallId": "c2"}
        ],
    }  # fmt: skip
    assert rebuild_agui([events]).ends == ["RUN_FINISHED"]


def test_a_turn_that_waits_finishes_its_ui_message_stream_for_tool_calls():
    parts = chunks(stream(ui_wire(), every_kind(), waits=True))
    assert parts[-3]["type"] == "data-status" and parts[-3]["data"]["state"] == "waiting"
    assert parts[-2] == {"type": "finish", "finishReason": "tool-calls"}


@pytest.mark.parametrize(
    ("wire", "rebuild", "encoded"),
    [(agui_wire, rebuild_agui, payloads), (ui_wire, rebuild_ui_stream, chunks)],
)
def test_resuming_after_any_frame_gives_exactly_the_rest(wire, rebuild, encoded):
    """Live the text comes in three pieces; resumed, it is replayed as one (as stored)."""
    live = stream(wire(), every_kind())
    stored = [e for e in every_kind() if e["type"] != "text" and "progress" not in e]
    stored.insert(-1, {"type": "text", "content": ANSWER})
    # One id per frame, but for a keyed update (feedback, progress): the id before it.
    assert len({f.id for f in live}) == len([f for f in live if not f.in_place])
    for cut in range(1, len(live) + 1):
        before = live[:cut]
        after = stream(wire(), stored, after=Cursor.parse(str(before[-1].id)))
        rebuilt = rebuild([encoded(before)[: len(before)], encoded(after)])
        whole = rebuild([encoded(live)])
        assert rebuilt.text == whole.text == ANSWER, cut
        assert rebuilt.arguments == whole.arguments, cut
        assert rebuilt.results == whole.results, cut


def test_a_resumed_stream_opens_the_text_it_carries_on():
    live = stream(agui_wire(), every_kind())
    middle = next(f for f in live if f.payload.type == "TEXT_MESSAGE_CONTENT")
    rest = payloads(stream(agui_wire(), every_kind(), after=middle.id))
    assert [e["type"] for e in rest[:3]] == ["RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START"]
    assert rest[3] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "2", "delta": ANSWER[10:30]}


@pytest.mark.parametrize(
    "value", ["", "3", "3-1", "a-b-c", "1-2-3-4", "-1-0-0", "1 -2-3", " 1-2-3", "1-2-3\n"]
)
def test_an_id_this_stream_never_sent_is_refused(value):
    with pytest.raises(BadEventId, match="Last-Event-ID"):
        Cursor.parse(value)
