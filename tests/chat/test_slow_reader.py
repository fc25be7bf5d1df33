"""A reader too slow for the channel layer loses frames; the client still gets every event
once, in order, and all the text: gaps are filled from the database."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import InMemoryChannelLayer, channel_layers

from activity.models import ActivityEvent
from chat.models import Message
from chat.socket import reads
from chat.socket.consumer import ChatConsumer
from chat.turns import runner
from tests.support import QUESTION
from tests.support.sockets import (
    ask,
    final_render,
    finish_turns,
    frames_until_done,
    json_until_done,
    live_render,
    open_socket,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def tiny_channels(settings):
    """A channel holds 2 messages: a burst to a busy consumer overflows it, and the layer drops
    the rest silently, as channels-redis does at its capacity."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": 2},
        }
    }
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


async def test_a_slow_reader_gets_every_event_in_order_and_all_the_text(
    tiny_channels, settings, alice, alice_conversation, knowledge_base, monkeypatch
):
    settings.GLASSBOX_TEXT_FRAME_SECONDS = 0  # a frame per token: the hardest case
    sent, received = [], []
    broadcast, handle = runner.send_turn_event, ChatConsumer.turn_event

    burst = asyncio.Event()

    async def counting_broadcast(group, **message):
        sent.append(message)
        await broadcast(group, **message)
        if len(sent) == 20:
            burst.set()

    async def counting_handler(self, message):
        received.append(message)
        if len(received) == 1:
            await burst.wait()  # the reader stalls while the turn goes on: its channel overflows
        await handle(self, message)

    monkeypatch.setattr(runner, "send_turn_event", counting_broadcast)
    monkeypatch.setattr(ChatConsumer, "turn_event", counting_handler)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": QUESTION}))
    events = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    answer = await Message.objects.aget(role="assistant")
    recorded_seqs = [
        seq async for seq in ActivityEvent.objects.filter(feed_id=answer.feed_id)
        .order_by("seq").values_list("seq", flat=True)
    ]  # fmt: skip
    assert [e["seq"] for e in events if "seq" in e] == recorded_seqs
    assert "".join(e["content"] for e in events if e["type"] == "text") == answer.content
    assert events[-1]["state"] == "complete"
    assert len(received) < len(sent), "the layer dropped frames, so the gaps were filled"


class LossyLayer(InMemoryChannelLayer):
    """Loses the tool call, its result and a stretch of text on the way, as a full channel
    would."""

    async def group_send(self, group, message):
        event = message.get("event", {})
        if event.get("seq") in (3, 4) or 40 <= message.get("offset", -1) < 120:
            return
        await super().group_send(group, message)


@pytest.fixture
def lossy_channels(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "tests.chat.test_slow_reader.LossyLayer"}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


async def test_lost_events_and_text_come_back_from_the_database_in_order(
    lossy_channels, settings, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_TEXT_FRAME_SECONDS = 0
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": QUESTION}))
    events = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    answer = await Message.objects.aget(role="assistant")
    assert [e["type"] for e in events if "seq" in e] == [
        "status", "status", "tool_call", "tool_result", "status", "status", "status"
    ]  # fmt: skip
    assert [e["seq"] for e in events if "seq" in e] == list(range(1, 8))
    assert "".join(e["content"] for e in events if e["type"] == "text") == answer.content


async def test_a_page_that_hears_of_its_turn_after_it_ended_plays_it_from_the_start(
    alice, alice_conversation, knowledge_base, monkeypatch
):
    """A busy process may hand a socket the news of a turn after the turn ended. The card
    starts as the turn did, then its lines and text follow: it does not show the end first,
    with no text, and stop there."""
    read = reads.new_turn

    async def after_the_turn(*args):
        await finish_turns()  # the socket is busy while the whole turn runs
        return await read(*args)

    monkeypatch.setattr(reads, "new_turn", after_the_turn)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    frames = await frames_until_done(socket)
    await socket.disconnect()

    assert "state-streaming" in frames[0] and "Searched the knowledge base" not in frames[0]
    assert any("Searching the knowledge base" in frame for frame in frames[1:-1])
    assert "Searched the knowledge base" in frames[-1] and "state-complete" in frames[-1]
    assert live_render(frames) == final_render(frames) != ""
