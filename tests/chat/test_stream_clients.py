"""The protocols' own clients read what Glassbox streams: @ag-ui/client's HttpAgent and the
`ai` package's UI message stream reader rebuild a turn that they followed live, lost mid-turn
and resumed with Last-Event-ID, and one that paused for an approval, exactly as stored."""

from __future__ import annotations

import pytest

from activity.models import ActivityEvent
from chat.models import Message
from chat.turns.registry import finish_all
from tests.support.api import ask, client_for
from tests.support.sockets import ask as ask_over_socket
from tests.support.sockets import finish_turns, json_until_waiting, open_socket
from tests.support.standard_streams import parse_frames, stream_url
from tests.support.stream_clients import ensure_installed, read_with_client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


@pytest.fixture(autouse=True)
def stream_clients():
    ensure_installed()


async def stored_calls(answer_id) -> dict:
    rows = ActivityEvent.objects.filter(feed__message__pk=answer_id, kind="tool_call")
    return {
        row.call_id: {"name": row.tool, "arguments": row.to_event().arguments}
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


@pytest.mark.parametrize("wire", ["agui", "ui-stream"])
async def test_the_standard_client_rebuilds_a_turn_it_lost_mid_text_and_resumed(
    alice, alice_conversation, knowledge_base, gate, wire
):
    held = gate(after=10, request=2)
    client = await client_for(alice)
    await ask(client, alice_conversation)
    await held.reached.wait()
    answer = await Message.objects.aget(role="assistant")
    url = stream_url(alice_conversation, answer.pk, wire)
    response = await client.get(url, headers={"Accept": "text/event-stream"})
    first = ""
    async for chunk in response.streaming_content:
        first += chunk.decode()
        if '"TEXT_MESSAGE_CONTENT"' in first or '"text-delta"' in first:
            break  # the connection drops in the middle of the answer
    await response.streaming_content.aclose()
    held.open()
    await finish_all()
    rest = await raw(client, url, last_event_id=last_id(first))

    rebuilt = read_with_client(wire, [first, rest])
    await answer.arefresh_from_db()
    assert rebuilt["errors"] == []
    assert rebuilt["text"] == answer.content
    assert rebuilt["toolCalls"] == await stored_calls(answer.pk)
    assert [result["summary"] for result in rebuilt["results"].values()] == ["3 documents"]
    if wire == "agui":
        assert rebuilt["ends"] == ["success"]
        assert "feedback" in rebuilt["customs"]
    else:
        assert rebuilt["id"] == str(answer.pk)
        assert {"data-status", "data-feedback"} <= set(rebuilt["data"])


@pytest.mark.parametrize("wire", ["agui", "ui-stream"])
async def test_the_standard_client_reads_a_pause_for_approval_then_the_rest(
    alice, alice_conversation, wire
):
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
