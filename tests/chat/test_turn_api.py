from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from chat.models import Conversation, Message
from chat.turns.registry import finish_all
from tests.support import QUESTION
from tests.support.api import ask, client_for, sse_events, streamed_json, turns_url
from tests.support.sockets import frames_until_done, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_a_program_follows_its_turn_as_server_sent_events(
    alice, alice_conversation, knowledge_base, gate
):
    held = gate(after=0)
    response = await ask(await client_for(alice), alice_conversation)
    events = await sse_events(response, held=held)
    await finish_all()
    kinds = [e["type"] for e in events]
    assert kinds[0] == "turn" and kinds[-1] == "done"
    first_text = kinds.index("text")
    assert kinds[1:first_text] == [
        "status", "status", "tool_feedback", "tool_call", "tool_result", "status", "status"
    ]  # fmt: skip
    seqs = [e["seq"] for e in events if "seq" in e]
    assert seqs == list(range(1, len(seqs) + 1))
    answer = await Message.objects.aget(pk=events[0]["message_id"])
    assert "".join(e["content"] for e in events if e["type"] == "text") == answer.content
    assert events[-1]["state"] == "complete"
    assert events[-1]["summary"] == {"icon": "📄", "text": "Searched the knowledge base"}


async def test_without_sse_the_finished_answer_comes_back(
    alice, alice_conversation, knowledge_base
):
    response = await ask(await client_for(alice), alice_conversation, stream=False)
    assert response.status_code == 200
    data = await streamed_json(response)
    assert data["role"] == "assistant" and data["state"] == "complete"
    assert "Salary negotiation" in data["content"]
    assert data["feed"]["summary"]["text"] == "Searched the knowledge base"
    assert [e["seq"] for e in data["feed"]["events"]] == list(range(1, 8))


async def test_a_browser_tab_watches_an_api_started_turn_live(
    alice, alice_conversation, knowledge_base
):
    tab = await open_socket(alice_conversation, alice)
    response = await ask(await client_for(alice), alice_conversation)
    events, frames = await asyncio.gather(sse_events(response), frames_until_done(tab))
    await finish_all()
    await tab.disconnect()
    assert QUESTION in frames[0]
    assert any("Found 3 documents" in f for f in frames)
    assert "Searched the knowledge base" in frames[-1]
    assert events[-1]["type"] == "done"


async def test_repeating_a_client_id_joins_the_turn_instead_of_starting_another(
    gate, alice, alice_conversation, knowledge_base
):
    held = gate(after=10, request=2)
    client = await client_for(alice)
    client_id = str(uuid.uuid4())
    first = await ask(client, alice_conversation, client_id=client_id)
    await held.reached.wait()  # mid-answer: some text is only in this process's memory
    second = await ask(client, alice_conversation, client_id=client_id)
    held.open()
    first_events, second_events = await asyncio.gather(sse_events(first), sse_events(second))
    await finish_all()
    assert first_events[0]["message_id"] == second_events[0]["message_id"]
    assert await Message.objects.filter(role="assistant").acount() == 1
    # The joined stream holds the same recorded events and the same answer text.
    recorded = [e for e in first_events if "seq" in e]
    assert [e for e in second_events if "seq" in e] == recorded
    text = "".join(e["content"] for e in first_events if e["type"] == "text")
    assert "".join(e["content"] for e in second_events if e["type"] == "text") == text
    # Asked again after it finished: the finished turn comes back, nothing new runs.
    third = await sse_events(await ask(client, alice_conversation, client_id=client_id))
    assert third[0]["message_id"] == first_events[0]["message_id"]
    assert third[-1]["type"] == "done"
    assert await Message.objects.filter(role="assistant").acount() == 1


@pytest.mark.parametrize(
    ("body", "status", "problem"),
    [
        ({"content": "   "}, 400, "Type a question first."),
        ({"content": "x" * 8001}, 400, "the limit is 8,000"),
        # The schema's maxLength counts what was sent: spaces around the question included.
        ({"content": "\u0085" + "x" * 8000}, 400, "That question is 8,001 characters long"),
        ({"content": QUESTION, "client_id": "nope"}, 400, "client_id must be a UUID."),
        ({}, 400, "Type a question first."),
    ],
)
async def test_bad_turn_requests_are_explained_and_save_nothing(
    alice, alice_conversation, body, status, problem
):
    client = await client_for(alice)
    response = await client.post(
        turns_url(alice_conversation), body, content_type="application/json"
    )
    assert response.status_code == status
    assert problem in response.content.decode()
    assert await Message.objects.acount() == 0


async def test_a_second_turn_while_one_runs_is_a_409(
    gate, alice, alice_conversation, knowledge_base
):
    held = gate(after=2)
    client = await client_for(alice)
    first = await ask(client, alice_conversation)
    await held.reached.wait()
    busy = await ask(client, alice_conversation)
    held.open()
    assert busy.status_code == 409
    assert busy.content.decode().startswith("event: error\ndata: ")
    assert "still working" in busy.content.decode()
    await sse_events(first)
    await finish_all()


async def test_only_the_owner_can_ask(alice, bob, alice_conversation):
    assert (await ask(await client_for(None), alice_conversation)).status_code == 401
    assert (await ask(await client_for(bob), alice_conversation)).status_code == 404
    assert await Message.objects.acount() == 0


async def test_json_clients_on_the_socket_negotiate_the_glassbox_json_subprotocol(
    alice, alice_conversation, knowledge_base
):
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": QUESTION}))
    events = await json_until_done(socket)
    await finish_all()
    await socket.disconnect()
    assert events[0]["type"] == "turn" and events[1]["type"] == "status"


async def test_a_client_that_drops_at_once_still_gets_its_turn_run(
    alice, alice_conversation, knowledge_base
):
    response = await ask(await client_for(alice), alice_conversation)
    response.close()  # gone before reading a byte
    await finish_all()
    answer = await Message.objects.aget(role="assistant")
    assert answer.state == Message.State.COMPLETE
    assert "Salary negotiation" in answer.content


async def test_turns_of_deleted_conversations_do_not_count_against_the_limit(
    settings, gate, alice, knowledge_base
):
    settings.GLASSBOX_MAX_CONCURRENT_TURNS = 1
    held = gate(after=2)
    client = await client_for(alice)
    first, second = [await Conversation.objects.acreate(owner=alice) for _ in range(2)]
    await ask(client, first)
    await held.reached.wait()
    assert (await ask(client, second)).status_code == 429
    await client.post(f"/c/{first.pk}/delete/")
    response = await ask(client, second)
    assert response.status_code == 200
    held.open()
    assert (await sse_events(response))[-1]["state"] == "complete"
    await finish_all()
