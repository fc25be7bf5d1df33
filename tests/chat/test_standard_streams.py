"""A turn read over HTTP as AG-UI events and as the AI SDK's UI message stream: finished and
live, resumed with Last-Event-ID, paused for an approval, and refused to anyone else."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator

import pytest
from django.http import StreamingHttpResponse
from django.test import AsyncClient

from activity.models import ActivityEvent
from chat import turns
from chat.models import Message
from chat.turns.registry import finish_all
from tests.support.api import ask, client_for, streamed_json
from tests.support.rows import tool_call_of
from tests.support.sockets import ask as ask_over_socket
from tests.support.sockets import finish_turns, json_until_waiting, open_socket
from tests.support.standard_streams import (
    parse_frames,
    read_frames,
    rebuild_agui,
    rebuild_ui_stream,
    stream_url,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

WIRES = [("agui", rebuild_agui), ("ui-stream", rebuild_ui_stream)]
EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


def in_place(payload) -> bool:
    return payload["type"] in ("data-feedback", "start-step") or payload.get("name") == "feedback"


def data(frames):
    return [payload for _, payload in frames]


async def stored_calls(answer_id) -> dict:
    rows = ActivityEvent.objects.filter(feed__message__pk=answer_id, kind="tool_call")
    return {row.call_id: tool_call_of(row).arguments async for row in rows}


async def finished_turn(client, conversation) -> Message:
    answer = await streamed_json(await ask(client, conversation, stream=False))
    return await Message.objects.aget(pk=answer["id"])


@pytest.mark.parametrize(("wire", "rebuild"), WIRES)
async def test_a_finished_turn_rebuilds_to_the_stored_answer(
    alice, alice_conversation, knowledge_base, wire, rebuild
):
    client = await client_for(alice)
    answer = await finished_turn(client, alice_conversation)
    response, frames = await read_frames(client, stream_url(alice_conversation, answer.pk, wire))
    rebuilt = rebuild([data(frames)])
    assert rebuilt.text == answer.content
    assert rebuilt.arguments == await stored_calls(answer.pk) != {}
    assert rebuilt.ends in (["RUN_FINISHED"], ["stop"])
    if wire == "ui-stream":
        assert response["x-vercel-ai-ui-message-stream"] == "v1"
        assert frames[-1] == (None, "[DONE]")
    numbered = [(frame_id, payload) for frame_id, payload in frames if frame_id]
    positions = [tuple(map(int, frame_id.split("-"))) for frame_id, _ in numbered]
    assert positions == sorted(positions)
    # Only a keyed update (the call's feedback, its progress) and the text's step share the
    # id before them.
    shared = [p for (one, _), (two, p) in itertools.pairwise(numbered) if one == two]
    assert shared and all(in_place(payload) for payload in shared)


@pytest.mark.parametrize(("wire", "rebuild"), WIRES)
async def test_a_turn_its_owner_stopped_ends_as_stopped_and_never_as_an_error(
    alice, alice_conversation, knowledge_base, gate, wire, rebuild
):
    held = gate(after=10, request=2)
    client = await client_for(alice)
    await ask(client, alice_conversation)
    await held.reached.wait()  # mid-answer
    answer = await Message.objects.aget(role="assistant")
    assert await turns.stop(conversation_id=alice_conversation.pk, answer_id=answer.pk)
    await finish_all()
    await answer.arefresh_from_db()
    _, frames = await read_frames(client, stream_url(alice_conversation, answer.pk, wire))

    payloads = data(frames)
    rebuilt = rebuild([payloads])
    assert answer.state == Message.State.STOPPED
    assert rebuilt.text == answer.content != ""  # what was written before the Stop
    kinds = [p["type"] for p in payloads if isinstance(p, dict)]
    assert "RUN_ERROR" not in kinds and "error" not in kinds
    if wire == "agui":
        assert payloads[-1]["outcome"] == {"type": "cancelled"}
    else:
        assert payloads[-2:] == [{"type": "abort", "reason": "Stopped by its user."}, "[DONE]"]


DROPS = ["TOOL_CALL_START", "tool-input-start", "TEXT_MESSAGE_CONTENT", "text-delta"]


@pytest.mark.parametrize(("wire", "rebuild"), WIRES)
@pytest.mark.parametrize("drop_after", ["a tool call's start", "some text"])
async def test_a_client_that_drops_mid_turn_resumes_exactly_where_it_was(
    alice, alice_conversation, knowledge_base, gate, wire, rebuild, drop_after
):
    held = gate(after=10, request=2)
    client = await client_for(alice)
    await ask(client, alice_conversation)
    await held.reached.wait()  # mid-answer: a tool call done, part of the text written
    answer = await Message.objects.aget(role="assistant")
    url = stream_url(alice_conversation, answer.pk, wire)
    response = await client.get(url, headers={"Accept": "text/event-stream"})
    assert isinstance(response, StreamingHttpResponse)
    stream = response.streaming_content
    assert isinstance(stream, AsyncGenerator)
    dropped = []
    async for chunk in stream:
        dropped += parse_frames(chunk.decode())
        if dropped[-1][1]["type"] in DROPS[(drop_after == "some text") * 2 :][:2]:
            break  # the client goes away here
    await stream.aclose()
    held.open()
    await finish_all()
    _, rest = await read_frames(client, url, last_event_id=dropped[-1][0])
    await answer.arefresh_from_db()
    rebuilt = rebuild([data(dropped), data(rest)])
    assert rebuilt.text == answer.content
    assert rebuilt.arguments == await stored_calls(answer.pk)


@pytest.mark.parametrize(("wire", "rebuild"), WIRES)
async def test_a_turn_waiting_for_approval_ends_the_stream_and_the_next_goes_on(
    alice, alice_conversation, wire, rebuild
):
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask_over_socket(socket, EMAIL)
    call_id = (await json_until_waiting(socket))[-1]["call_id"]
    client = await client_for(alice)
    answer = await Message.objects.aget(role="assistant")
    url = stream_url(alice_conversation, answer.pk, wire)
    _, paused = await read_frames(client, url)
    last = data(paused)[-1] if wire == "agui" else data(paused)[-2]
    if wire == "agui":
        assert last["outcome"]["interrupts"][0]["toolCallId"] == call_id
    else:
        assert last == {"type": "finish", "finishReason": "tool-calls"}
    decided = await client.post(
        f"/api/conversations/{alice_conversation.pk}/approvals/{call_id}/",
        {"decision": "approve"},
        content_type="application/json",
    )
    assert decided.status_code == 200
    resumed_after = next(frame_id for frame_id, _ in reversed(paused) if frame_id)
    _, rest = await read_frames(client, url, last_event_id=resumed_after)
    await finish_turns()
    await socket.disconnect()
    await answer.arefresh_from_db()
    rebuilt = rebuild([data(paused), data(rest)])
    assert "outbox" in answer.content and rebuilt.text == answer.content
    decisions = [e for e in data(rest) if e != "[DONE]" and "decision" in (
        e.get("name"), e["type"][5:]
    )]  # fmt: skip
    assert len(decisions) == 1
    assert (decisions[0].get("value") or decisions[0].get("data"))["decision"] == "approve"


@pytest.mark.parametrize(("wire", "rebuild"), WIRES)
async def test_another_user_gets_404_and_a_question_is_no_turn(
    alice, bob, alice_conversation, knowledge_base, wire, rebuild
):
    answer = await finished_turn(await client_for(alice), alice_conversation)
    url = stream_url(alice_conversation, answer.pk, wire)
    refused = await (await client_for(bob)).get(url)
    assert refused.status_code == 404
    question = await Message.objects.aget(role="user")
    alices = await client_for(alice)
    assert (await alices.get(stream_url(alice_conversation, question.pk, wire))).status_code == 404
    assert (await AsyncClient().get(url)).status_code in (401, 403)


@pytest.mark.parametrize("wire", ["agui", "ui-stream"])
async def test_a_bad_last_event_id_is_a_clear_400_that_streams_nothing(
    alice, alice_conversation, knowledge_base, wire
):
    client = await client_for(alice)
    answer = await finished_turn(client, alice_conversation)
    url = stream_url(alice_conversation, answer.pk, wire)
    as_json = await client.get(url, headers={"Last-Event-ID": "7"})
    assert as_json.status_code == 400
    assert as_json.json() == {
        "Last-Event-ID": "Last-Event-ID must be the id of a frame of this stream "
        '(three numbers joined by "-", as in "3-2-0").'
    }
    as_sse = await client.get(url, headers={"Last-Event-ID": "x", "Accept": "text/event-stream"})
    assert as_sse.status_code == 400
    (error,) = [payload for _, payload in parse_frames(as_sse.content.decode())][:1]
    assert "Last-Event-ID must be" in (error.get("message") or error.get("errorText"))
    assert json.dumps(error).count("3-2-0") == 1


@pytest.mark.parametrize("wire", ["agui", "ui-stream"])
@pytest.mark.parametrize(
    "last_event_id",
    ["999-1-0", "1-99-0", "1-1-999999", "000000000001-1-0"],
    ids=["an event never recorded", "a part never sent", "text never written", "padded"],
)
async def test_an_id_of_the_right_form_this_stream_never_sent_is_a_400(
    alice, alice_conversation, knowledge_base, wire, last_event_id
):
    client = await client_for(alice)
    answer = await finished_turn(client, alice_conversation)
    url = stream_url(alice_conversation, answer.pk, wire)
    _, frames = await read_frames(client, url)
    sent = [frame_id for frame_id, _payload in frames if frame_id]  # [DONE] has none
    if last_event_id == "000000000001-1-0":  # the same numbers as a sent id, written longer
        assert "1-1-0" in sent
        response = await client.get(url, headers={"Last-Event-ID": last_event_id})
        assert response.status_code == 200
        return
    assert last_event_id not in sent

    response = await client.get(url, headers={"Last-Event-ID": last_event_id})
    assert response.status_code == 400
    assert list(response.json()) == ["Last-Event-ID"]
    for frame_id in sent:  # every id it did send resumes
        resumed = await client.get(url, headers={"Last-Event-ID": frame_id})
        assert resumed.status_code == 200, frame_id


async def test_an_empty_last_event_id_reads_from_the_start(
    alice, alice_conversation, knowledge_base
):
    client = await client_for(alice)
    answer = await finished_turn(client, alice_conversation)
    url = stream_url(alice_conversation, answer.pk, "agui")
    _, frames = await read_frames(client, url, last_event_id="")
    assert rebuild_agui([data(frames)]).text == answer.content
