"""The protocols' own clients read what Glassbox streams: @ag-ui/client's HttpAgent and the
`ai` package's chat transport and UI message stream reader follow a live server's turn
themselves, let go of it mid tool call and resume with Last-Event-ID, missing and repeating
nothing; and they rebuild a turn that paused for an approval, exactly as stored, and one its
owner stopped, ended without an error."""

from __future__ import annotations

import itertools
import json

import pytest

from activity.models import ActivityEvent
from chat import turns
from chat.models import Message
from tests.support.api import ask as ask_over_api
from tests.support.api import client_for
from tests.support.fakes import text_response, tool_call_response
from tests.support.held_provider import held_provider
from tests.support.rows import tool_call_of
from tests.support.servers import manage, serve
from tests.support.sockets import ask as ask_over_socket
from tests.support.sockets import finish_turns, json_until_waiting, open_socket
from tests.support.standard_streams import parse_frames, stream_url
from tests.support.stream_clients import (
    ensure_installed,
    follow_in_thread,
    follow_live,
    read_with_client,
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
        ) as server,
    ):
        token = manage(server.env, "drf_create_token", "demo").split()[2]
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


@pytest.mark.server
def test_each_standard_client_follows_a_live_turn_lets_go_mid_tool_call_and_resumes_losing_nothing(
    scripted_server,
):
    # One test for both clients: under xdist, two would start a server each.
    for wire in ("agui", "ui-stream"):
        provider, server, token = scripted_server
        follows_lets_go_and_resumes(provider, server, token, wire)


def follows_lets_go_and_resumes(provider, server, token: str, wire: str) -> None:
    calling = provider.respond(
        tool_call_response(("call_live", "calculator", json.dumps(ARGUMENTS)), size=4),
        hold_after=2,
    )
    answering = provider.respond(text_response(ANSWER, size=5), hold_after=4)
    conversation, answer_id = start_turn(server, token, QUESTION)
    path = f"/api/conversations/{conversation}/messages/{answer_id}/{wire}/"
    never_let_go = follow_in_thread(server, token, path)

    def while_away() -> None:
        # The call's arguments arrive and it runs, the answer begins and is held mid-text.
        calling.open()
        assert answering.reached.wait(30)

    report = follow_live(
        wire, server.url + path, token, drop_after=DROP_AFTER[wire],
        dropped=while_away, resumed=answering.open,  # the rest of the answer comes live
    )  # fmt: skip
    assert never_let_go.finished.wait(30)
    answer = stored_answer(server, token, conversation)

    assert report["errors"] == [], wire
    assert answer["state"] == "complete" and report["text"] == answer["content"] == ANSWER
    calls = [(c["id"], c["name"], json.loads(c["arguments"])) for c in report["toolCalls"]]
    assert calls == [("call_live", "calculator", ARGUMENTS)]
    assert report["results"]["call_live"]["ok"] is True
    assert report["ends"] == (["success"] if wire == "agui" else ["finish"])
    first, resumed = ([(f["id"], f["data"]) for f in frames] for frames in report["connections"])
    assert first[-1][1]["type"] == DROP_AFTER[wire]
    assert report["resumedAfter"] == first[-1][0]
    # The resumed connection first reopens what was open (the run, the call) at that id.
    reopened = list(itertools.takewhile(lambda f: f[0] == report["resumedAfter"], resumed))
    assert reopened and all(data["type"] in REOPENING for _id, data in reopened)
    had = first + resumed[len(reopened) :]
    positions = [position(frame_id) for frame_id, _ in had if frame_id]
    assert positions == sorted(set(positions)), "in order, none twice"
    # Frame for frame what a client that never let go had, the answer's text cut elsewhere.
    assert without_text(had) == without_text(never_let_go.frames)
    assert text_of(had) == text_of(never_let_go.frames) == ANSWER


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
