"""The channel layer may drop any message to a busy reader, `done` included (channels-redis
drops silently at a full channel). A client that missed it is shown the end anyway, from the
database, once the turn has been quiet for two heartbeats."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer

from chat.models import Message
from chat.turns import runner
from tests.support import QUESTION
from tests.support.api import ask as ask_api
from tests.support.api import client_for, sse_events
from tests.support.sockets import ask, finish_turns, frames_until_done, open_socket, turn_frames

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def done_is_dropped(settings, monkeypatch):
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.2
    send = runner.send_turn_event

    async def lossy(group, *, answer_id, event, **extra):
        if event["type"] != "done":
            await send(group, answer_id=answer_id, event=event, **extra)

    monkeypatch.setattr(runner, "send_turn_event", lossy)


async def test_a_page_that_missed_done_still_folds_the_feed(
    alice, alice_conversation, knowledge_base, done_is_dropped
):
    frames = await turn_frames(alice_conversation, alice, QUESTION)
    assert "Searched the knowledge base" in frames[-1] and "state-complete" in frames[-1]


async def test_a_program_on_the_socket_that_missed_done_gets_it(
    alice, alice_conversation, knowledge_base, done_is_dropped
):
    events = await turn_frames(alice_conversation, alice, QUESTION, as_json=True)
    assert events[-1]["state"] == "complete"
    assert events[-1]["summary"]["text"] == "Searched the knowledge base"
    answer = await Message.objects.aget(role="assistant")
    assert "".join(e["content"] for e in events if e["type"] == "text") == answer.content


async def test_a_server_sent_event_stream_that_missed_done_ends(
    alice, alice_conversation, knowledge_base, done_is_dropped
):
    response = await ask_api(await client_for(alice), alice_conversation)
    events = await asyncio.wait_for(sse_events(response), 5)
    await finish_turns()
    assert events[-1]["type"] == "done" and events[-1]["state"] == "complete"


async def test_a_layer_that_fails_costs_frames_never_the_turn(
    alice, alice_conversation, knowledge_base, settings, monkeypatch
):
    """Redis gone or its pool exhausted: the turn still completes and is recorded, and the
    page is shown its end from the database."""
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.2
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    first = await socket.receive_from(timeout=5)  # the question appears
    layer = get_channel_layer()

    async def broken(group, message):
        raise ConnectionError("Too many connections")

    monkeypatch.setattr(layer, "group_send", broken)
    frames = [first, *await frames_until_done(socket, limit=5)]
    await finish_turns()
    await socket.disconnect()
    answer = await Message.objects.select_related("feed").aget(role="assistant")
    assert answer.state == Message.State.COMPLETE and answer.answer_feed.state == "complete"
    assert "Searched the knowledge base" in frames[-1] and "Salary negotiation" in frames[-1]
