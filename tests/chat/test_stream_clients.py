"""The protocols' own clients read what Glassbox streams: @ag-ui/client's HttpAgent and the
`ai` package's chat transport and UI message stream reader follow a live server's turn
themselves, let go of it (mid tool call, after a line or the model's feedback, mid-text, after
a call's progress) and resume with Last-Event-ID, rebuilding exactly what a client that never
let go rebuilt; a finished turn's stream cut after every frame and resumed rebuilds the uncut
message; and they rebuild a turn that paused for an approval, exactly as stored, and one its
owner stopped, ended without an error."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from activity.models import ActivityEvent
from chat import turns
from chat.models import Message
from tests.support.api import ask as ask_over_api
from tests.support.api import client_for, streamed_json
from tests.support.fakes import text_response, tool_call_response
from tests.support.held_provider import held_provider
from tests.support.rows import tool_call_of
from tests.support.servers import demo_token, serve
from tests.support.sockets import ask as ask_over_socket
from tests.support.sockets import finish_turns, json_until_waiting, open_socket
from tests.support.standard_streams import parse_frames, stream_url
from tests.support.stream_clients import (
    block_id,
    block_type,
    ensure_installed,
    follow_in_thread,
    follow_live,
    read_each_with_client,
    read_with_client,
    sse_blocks,
    start_turn,
    stored_answer,
)

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"
QUESTION = "What is two and two?"
ARGUMENTS = {"feedback_to_user": "Adding two and two", "expression": "2+2"}
ANSWER = "Two and two make four, as the calculator says."
# The frame each client lets go after: its tool call is named, its arguments still coming.
DROP_AFTER = {"agui": "TOOL_CALL_START", "ui-stream": "tool-input-start"}
TEXT = ("TEXT_MESSAGE_CONTENT", "text-delta")
# What a resumed connection may send first, at the id it resumes after.
REOPENING = ("RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TOOL_CALL_START", "start")


async def stored_calls(answer_id) -> dict:
    rows = ActivityEvent.objects.filter(feed__message__pk=answer_id, kind="tool_call")
    return {
        row.call_id: {"name": row.tool, "arguments": tool_call_of(row).arguments}
        async for row in rows
    }


async def raw(client, url: str, last_event_id: str | None = None) -> str:
    headers = {"Accept": "text/event-stream"}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    response = await client.get(url, headers=headers)
    return b"".join([chunk async for chunk in response.streaming_content]).decode()


def last_id(text: str) -> str:
    return next(frame_id for frame_id, _ in reversed(parse_frames(text)) if frame_id)


@pytest.fixture(scope="module")
def scripted_server(tmp_path_factory):
    """A Glassbox server whose model is a scripted provider the tests hold mid-stream, and
    the demo user's API token."""
    ensure_installed()
    with (
        held_provider() as provider,
        serve(
            tmp_path_factory.mktemp("clients"),
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=provider.url,
            GLASSBOX_MODEL="scripted",
            GLASSBOX_TOOLS="chat.agent.builtin_tools.CALCULATOR,tests.chat.custom_tools.COUNT_SLOWLY",
        ) as server,
    ):
        token = demo_token(server.env)
        yield provider, server, token


def position(frame_id: str) -> tuple[int, ...]:
    return tuple(int(number) for number in frame_id.split("-"))


def without_text(frames) -> list:
    return [
        frame for frame in frames if not (isinstance(frame[1], dict) and frame[1]["type"] in TEXT)
    ]


def text_of(frames) -> str:
    return "".join(
        data["delta"] for _id, data in frames if isinstance(data, dict) and data["type"] in TEXT
    )


# Where each client lets go of a live turn: mid tool call (its name known, its arguments still
# coming), right after a line's new text or the model's feedback, and mid-text.
LIVE_DROPS = {
    "agui": ["TOOL_CALL_START", "CUSTOM", "TEXT_MESSAGE_CONTENT"],
    "ui-stream": ["tool-input-start", "data-feedback", "text-delta"],
}


# The frame of a call's progress on each wire.
PROGRESS = {"agui": "CUSTOM:progress", "ui-stream": "data-progress"}


@pytest.mark.server
@pytest.mark.own_site  # the scripted server's site is its own SQLite
def test_each_standard_client_follows_a_live_turn_lets_go_and_resumes_to_the_uncut_message(
    scripted_server, tmp_path
):
    # One test for both clients: under xdist, two would start a server each.
    provider, server, token = scripted_server
    for wire, drops in LIVE_DROPS.items():
        for drop_after in drops:
            follows_lets_go_and_resumes(provider, server, token, wire, drop_after)
        resumes_with_the_progress_reported_while_away(
            provider, server, token, wire, tmp_path / wire
        )


def is_progress(wire: str, step: int) -> Callable[[Any], bool]:
    def wanted(data: Any) -> bool:
        if not isinstance(data, dict):
            return False
        value = data.get("value") if wire == "agui" else data.get("data")
        kind = data.get("name") if wire == "agui" else data.get("type")
        return (
            kind in ("progress", "data-progress")
            and isinstance(value, dict)
            and value["progress"] == step
        )

    return wanted


def resumes_with_the_progress_reported_while_away(provider, server, token, wire, gate) -> None:
    """A call reports 1 of 3; the client lets go; 2 of 3 comes while it is away (live only,
    never stored): the resumed stream brings it at once, then 3 of 3 live."""
    gate.mkdir()
    arguments = {"feedback_to_user": "Counting to three", "steps": 3, "gate": str(gate)}
    provider.respond(tool_call_response(("call_count", "count_slowly", json.dumps(arguments))))
    provider.respond(text_response(ANSWER, size=5))
    conversation, answer_id = start_turn(server, token, "Count to three, slowly.")
    path = f"/api/conversations/{conversation}/messages/{answer_id}/{wire}/"
    never_let_go = follow_in_thread(server, token, path)

    def while_away() -> None:
        (gate / "2").touch()
        never_let_go.wait_for(is_progress(wire, 2))

    report = follow_live(
        wire, server.url + path, token, drop_after=PROGRESS[wire],
        dropped=while_away, resumed=(gate / "3").touch,
    )  # fmt: skip
    assert never_let_go.finished.wait(30)
    uncut = read_with_client(wire, [sse_text(never_let_go.frames)])

    first, resumed = ([f["data"] for f in frames] for frames in report["connections"])
    assert [is_progress(wire, step)(first[-1]) for step in (1, 2)] == [True, False]
    progress = [step for step in (1, 2, 3) if any(map(is_progress(wire, step), resumed))]
    assert progress == [2, 3], wire  # the one sent while away, then the next live
    assert report["errors"] == [] and report["text"] == ANSWER
    if wire == "ui-stream":
        assert report["message"] == uncut["message"]
        (part,) = (p for p in report["message"]["parts"] if p["type"] == "data-progress")
        assert part["data"]["progress"] == 3
    else:
        assert report["messages"] == uncut["messages"]


def follows_lets_go_and_resumes(provider, server, token: str, wire: str, drop_after: str) -> None:
    calling = provider.respond(
        tool_call_response(("call_live", "calculator", json.dumps(ARGUMENTS)), size=4),
        hold_after=2,
    )
    answering = provider.respond(text_response(ANSWER, size=5), hold_after=4)
    if drop_after != DROP_AFTER[wire]:
        calling.open()  # the feedback and the text come before the client lets go
    conversation, answer_id = start_turn(server, token, QUESTION)
    path = f"/api/conversations/{conversation}/messages/{answer_id}/{wire}/"
    never_let_go = follow_in_thread(server, token, path)

    def while_away() -> None:
        # The call's arguments arrive and it runs, the answer begins and is held mid-text.
        calling.open()
        assert answering.reached.wait(30)
        if drop_after in TEXT:
            # Nothing new to resume with until the text goes on: it ends while away.
            answering.open()
            assert never_let_go.finished.wait(30)

    report = follow_live(
        wire, server.url + path, token, drop_after=drop_after,
        dropped=while_away, resumed=answering.open,  # the rest of the answer comes live
    )  # fmt: skip
    assert never_let_go.finished.wait(30)
    answer = stored_answer(server, token, conversation)
    uncut = read_with_client(wire, [sse_text(never_let_go.frames)])
    cut = (wire, drop_after)

    assert report["errors"] == uncut["errors"] == [], cut
    assert answer["state"] == "complete", (cut, answer)
    assert report["text"] == answer["content"] == ANSWER, cut
    calls = [(c["id"], c["name"], json.loads(c["arguments"])) for c in report["toolCalls"]]
    assert calls == [("call_live", "calculator", ARGUMENTS)], cut
    assert report["ends"] == (["success"] if wire == "agui" else ["finish"]), cut
    first, resumed = ([(f["id"], f["data"]) for f in frames] for frames in report["connections"])
    assert first[-1][1]["type"] == drop_after and report["resumedAfter"] == first[-1][0]
    # What the client rebuilt is what one that never let go rebuilt: the same parts (one
    # text part, done), the same messages.
    if wire == "ui-stream":
        texts = [part for part in report["message"]["parts"] if part["type"] == "text"]
        assert [part["state"] for part in texts] == ["done"], cut
        assert report["message"] == uncut["message"], cut
    else:
        assert report["messages"] == uncut["messages"], cut
    if drop_after not in TEXT:
        # Its ids are those of the uncut stream, but for the text's, cut where it came (and a
        # replay sends the text after the stored lines: past a cut in the text, a line's id
        # may say less text than live).
        later = position(report["resumedAfter"])
        assert {i for i, _ in without_text(resumed) if i and position(i) > later} <= {
            i for i, _ in never_let_go.frames
        }, cut


def sse_text(frames) -> str:
    """Frames read as (id, data) written back as the stream they came in."""
    return "".join(
        (f"id: {frame_id}\n" if frame_id else "")
        + f"data: {data if data == '[DONE]' else json.dumps(data, ensure_ascii=False)}\n\n"
        for frame_id, data in frames
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["agui", "ui-stream"])
async def test_the_standard_client_reads_a_pause_for_approval_then_the_rest(
    alice, alice_conversation, wire
):
    ensure_installed()
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask_over_socket(socket, EMAIL)
    call_id = (await json_until_waiting(socket))[-1]["call_id"]
    client = await client_for(alice)
    answer = await Message.objects.aget(role="assistant")
    url = stream_url(alice_conversation, answer.pk, wire)
    paused = await raw(client, url)
    decided = await client.post(
        f"/api/conversations/{alice_conversation.pk}/approvals/{call_id}/",
        {"decision": "approve"},
        content_type="application/json",
    )
    assert decided.status_code == 200
    rest = await raw(client, url, last_event_id=last_id(paused))
    await finish_turns()
    await socket.disconnect()

    rebuilt = read_with_client(wire, [paused, rest])
    await answer.arefresh_from_db()
    assert rebuilt["errors"] == []
    assert rebuilt["text"] == answer.content and "outbox" in answer.content
    assert rebuilt["toolCalls"] == await stored_calls(answer.pk)
    assert rebuilt["results"][call_id]["ok"] is True
    if wire == "agui":
        assert rebuilt["ends"] == ["interrupt", "success"]
        assert "decision" in rebuilt["customs"]
    else:
        assert "data-decision" in rebuilt["data"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["agui", "ui-stream"])
async def test_the_standard_client_reads_a_stopped_turn_as_ended_without_an_error(
    alice, alice_conversation, knowledge_base, gate, wire
):
    ensure_installed()
    held = gate(after=10, request=2)
    client = await client_for(alice)
    await ask_over_api(client, alice_conversation)
    await held.reached.wait()  # mid-answer
    answer = await Message.objects.aget(role="assistant")
    assert await turns.stop(conversation_id=alice_conversation.pk, answer_id=answer.pk)
    await finish_turns()
    stopped = await raw(client, stream_url(alice_conversation, answer.pk, wire))

    rebuilt = read_with_client(wire, [stopped])
    await answer.arefresh_from_db()
    assert answer.state == Message.State.STOPPED
    assert rebuilt["errors"] == []  # no RUN_ERROR, no error part: the client saw no failure
    assert rebuilt["text"] == answer.content != ""
    if wire == "agui":
        assert rebuilt["ends"] == ["cancelled"]
    else:
        assert "data-status" in rebuilt["data"]
        ends = [data["type"] for _, data in parse_frames(stopped)[-2:-1]]
        assert ends == ["abort"]  # as the SDK's own stream ends when its caller aborts


THINK = "Think it through: how do I negotiate my salary?"
# The frames a cut must fall after: the answer's text, the 💭 line, a call's input, output and
# feedback, and the end (each wire's names).
CUT_AFTER = {
    "agui": {"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "STEP_STARTED", "TOOL_CALL_START",
             "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM", "RUN_FINISHED"},
    "ui-stream": {"start-step", "text-start", "text-delta", "data-status", "tool-input-start",
                  "tool-input-available", "tool-output-available", "data-feedback",
                  "text-end", "finish"},
}  # fmt: skip


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["agui", "ui-stream"])
async def test_the_standard_client_cut_after_any_frame_and_resumed_rebuilds_the_uncut_message(
    alice, alice_conversation, knowledge_base, wire
):
    """`readUIMessageStream({ message })` and HttpAgent, each read cut after every frame and
    carried on from `Last-Event-ID`, end with exactly what the uncut read has: one text part,
    done, the same tool and data parts in the same order (the AI SDK), the same messages
    (AG-UI)."""
    ensure_installed()
    client = await client_for(alice)
    asked = await ask_over_api(client, alice_conversation, stream=False, content=THINK)
    done = await streamed_json(asked)
    url = stream_url(alice_conversation, done["id"], wire)
    blocks = sse_blocks(await raw(client, url))
    assert CUT_AFTER[wire] <= {block_type(block) for block in blocks}
    reads = [["".join(blocks)]]
    cuts = [cut for cut in range(1, len(blocks) + 1) if block_id(blocks[cut - 1])]
    for cut in cuts:
        rest = await raw(client, url, last_event_id=block_id(blocks[cut - 1]))
        reads.append(["".join(blocks[:cut]), rest])
    uncut, *resumed = read_each_with_client(wire, reads)

    assert uncut["errors"] == [] and uncut["text"] == done["content"] != ""
    if wire == "ui-stream":
        texts = [part for part in uncut["message"]["parts"] if part["type"] == "text"]
        assert [part["state"] for part in texts] == ["done"]
    for cut, read in zip(cuts, resumed, strict=True):
        after = (cut, block_type(blocks[cut - 1]))
        assert read["errors"] == [], after
        if wire == "ui-stream":
            assert read["message"] == uncut["message"], after
        else:
            assert read["messages"] == uncut["messages"], after
