"""The protocols' own clients (@ag-ui/client's HttpAgent, the `ai` package's UI message stream
reader) rebuild the agent's plan as its last update, however many came, and keep each MCP
log message; also when the stream is cut after any frame and resumed."""

from __future__ import annotations

import pytest

from activity.recording.events import from_json
from chat.api.standards.agui import AguiWire
from chat.api.standards.ui_stream import UiStreamWire
from chat.turns.wires import Cursor, Frame, Resume, Wire
from tests.support.stream_clients import ensure_installed, read_with_client
from tests.support.turn_events import PLAN_STEPS, every_kind, with_plan_and_log

LAST_PLAN = {"steps": PLAN_STEPS, "call_id": "p2"}
# Frames built in memory, read by Node.
pytestmark = pytest.mark.own_site


@pytest.fixture(scope="module", autouse=True)
def clients():
    ensure_installed()


def frames(wire: Wire, after: str | None = None) -> list[Frame]:
    resume, made = Resume(Cursor.parse(after) if after else None), list[Frame]()
    for event in with_plan_and_log(every_kind()):
        made += resume.frames(wire.frames(from_json(event)))
    return made


def encoded(wire, after: str | None = None) -> str:
    return "".join(wire.encode(frame) for frame in frames(wire, after)) + wire.closing


def kind(frame) -> str:
    payload = frame.payload
    return payload["type"] if isinstance(payload, dict) else payload.type.value


def test_the_ai_sdk_keeps_one_plan_part_as_its_last_update_and_each_log_message():
    rebuilt = read_with_client("ui-stream", [encoded(UiStreamWire("2"))])

    assert rebuilt["errors"] == []
    plans = [part for part in rebuilt["dataParts"] if part["type"] == "data-plan"]
    assert len(plans) == 1 and plans[0]["data"]["steps"] == PLAN_STEPS
    (logged,) = [part["data"] for part in rebuilt["dataParts"] if part["type"] == "data-tool-log"]
    assert (logged["level"], logged["data"]) == ("warning", "cache <cold>")


def test_ag_ui_s_agent_holds_the_last_plan_as_its_state_and_hears_the_log_message():
    rebuilt = read_with_client("agui", [encoded(AguiWire("conv", "2"))])

    assert rebuilt["errors"] == [] and rebuilt["ends"] == ["success"]
    assert rebuilt["state"] == {"plan": LAST_PLAN}
    assert rebuilt["customs"].count("tool_log") == 1


@pytest.mark.parametrize(
    ("wire", "planned"),
    [
        (lambda: UiStreamWire("2"), ("data-plan", "data-tool-log")),
        (lambda: AguiWire("conv", "2"), ("STATE_SNAPSHOT", "CUSTOM")),
    ],
)
def test_a_client_cut_after_a_plan_or_log_frame_and_resumed_rebuilds_the_same(wire, planned):
    name = "ui-stream" if isinstance(wire(), UiStreamWire) else "agui"
    whole = read_with_client(name, [encoded(wire())])
    live = frames(wire())
    cuts = [n for n, frame in enumerate(live) if kind(frame) in planned]
    assert len(cuts) >= 3
    for cut in cuts:
        before = "".join(wire().encode(frame) for frame in live[: cut + 1])
        rest = encoded(wire(), after=str(live[cut].id))
        rebuilt = read_with_client(name, [before, rest])
        for key in ("text", "toolCalls", "results", "state", "dataParts"):
            assert rebuilt.get(key) == whole.get(key), (cut, key)
