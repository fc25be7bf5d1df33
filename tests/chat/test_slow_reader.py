"""A reader too slow for the channel layer loses frames; the client still gets every event
once, in order, and all the text: gaps are filled from the database."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import InMemoryChannelLayer, channel_layers

from activity.models import ActivityEvent
from chat.models import Message
from chat.socket.consumer import ChatConsumer
from chat.turns import runner
from tests.support import QUESTION
from tests.support.sockets import finish_turns, json_until_done, open_socket

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
