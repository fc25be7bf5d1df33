"""A Redis restart while a page is open, on a Redis server of the test's own: the next
question's socket hears its whole turn, and a publish that meets a connection the restart
closed goes out on a fresh one."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from chat.models import Message
from tests.support import QUESTION
from tests.support.outages import redis_server
from tests.support.sockets import ask, finish_turns, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def private_redis(settings):
    from channels.layers import channel_layers

    with redis_server() as server:
        settings.CHANNEL_LAYERS = {
            "default": {
                "BACKEND": "project.redis_layer.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [{"address": server.url, "socket_timeout": 30}]},
            }
        }
        channel_layers.backends.clear()
        yield server
        channel_layers.backends.clear()


async def test_after_a_redis_restart_the_socket_that_asks_hears_its_whole_turn(
    alice, alice_conversation, knowledge_base, private_redis
):
    from channels.layers import get_channel_layer

    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, QUESTION)
    assert (await json_until_done(socket))[-1]["state"] == "complete"
    await finish_turns()

    await asyncio.to_thread(private_redis.restart)
    await ask(socket, "What should I say when they ask my salary expectations?")
    heard = await json_until_done(socket, limit=30)
    await finish_turns()
    await socket.disconnect()
    layer = get_channel_layer()
    assert layer is not None
    await layer.flush()

    answer = await Message.objects.select_related("feed").aget(pk=int(heard[-1]["message_id"]))
    assert heard[0]["type"] == "turn" and heard[0]["message_id"] == str(answer.pk)
    assert answer.state == Message.State.COMPLETE and heard[-1]["state"] == "complete"
    seqs = [event["seq"] for event in heard if "seq" in event]
    assert seqs == list(range(1, answer.answer_feed.event_count + 1))
    assert "".join(e["content"] for e in heard if e["type"] == "text") == answer.content


async def test_a_publish_after_a_redis_restart_goes_out_on_a_fresh_connection(private_redis):
    from project.redis_layer import RedisPubSubChannelLayer

    speaking = RedisPubSubChannelLayer(hosts=[{"address": private_redis.url}])
    await speaking.group_send("warm-up", {"type": "turn.event"})  # a connection in the pool
    await asyncio.to_thread(private_redis.restart)
    listening = RedisPubSubChannelLayer(hosts=[{"address": private_redis.url}])
    group = f"restarted-{uuid.uuid4().hex}"
    member = await listening.new_channel()
    await listening.group_add(group, member)

    await speaking.group_send(group, {"type": "turn.event", "n": 1})
    async with asyncio.timeout(5):
        assert (await listening.receive(member))["n"] == 1
    for layer in (speaking, listening):
        await layer.flush()
