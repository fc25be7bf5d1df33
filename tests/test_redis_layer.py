"""The channel layer between processes (project.layers.RedisPubSubChannelLayer) on a real
Redis: a member hears what is published as soon as it has joined, a stalled channel drops
only its own overflow, and a follower that times out or leaves loses nothing and leaves
nothing behind. Needs REDIS_URL, which .ci/run provides; skipped without it unless
REQUIRE_SERVICES=1."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
import redis.asyncio as redis

from project.layers import RedisPubSubChannelLayer

pytestmark = pytest.mark.asyncio


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail("REQUIRE_SERVICES=1 but REDIS_URL is missing")
        pytest.skip("needs Redis (REDIS_URL); .ci/run starts it")
    return url


def layer_for(url: str, **config) -> RedisPubSubChannelLayer:
    """A layer as a process configures it from the settings; two are two processes."""
    return RedisPubSubChannelLayer(hosts=[{"address": url}], **config)


async def subscribers(url: str, name: str) -> int:
    async with redis.Redis.from_url(url) as client:
        return dict(await client.pubsub_numsub(name))[name.encode()]


async def test_a_member_hears_what_is_published_the_moment_it_has_joined(redis_url):
    listening, speaking = layer_for(redis_url), layer_for(redis_url)
    for n in range(20):
        group = f"joined-{uuid.uuid4().hex}"
        channel = await listening.new_channel()
        await listening.group_add(group, channel)
        # Redis has taken the subscription: another process's message cannot slip past it.
        assert await subscribers(redis_url, f"asgi__group__{group}") == 1
        await speaking.group_send(group, {"type": "turn.event", "n": n})
        async with asyncio.timeout(5):
            assert (await listening.receive(channel))["n"] == n
    await listening.flush()
    await speaking.flush()


async def test_a_stalled_channel_drops_its_overflow_and_the_others_lose_nothing(redis_url):
    layer = layer_for(redis_url, capacity=3)
    group = f"stalled-{uuid.uuid4().hex}"
    stalled, reading = await layer.new_channel(), await layer.new_channel()
    for channel in (stalled, reading):
        await layer.group_add(group, channel)
    async with asyncio.timeout(10):
        for n in range(10):
            await layer.group_send(group, {"type": "turn.event", "n": n})
            assert (await layer.receive(reading))["n"] == n
        # The stalled channel kept the first three; the reader went on after the overflow.
        assert [(await layer.receive(stalled))["n"] for _ in range(3)] == [0, 1, 2]
        await layer.group_send(group, {"type": "turn.event", "n": 10})
        assert (await layer.receive(stalled))["n"] == 10
        assert (await layer.receive(reading))["n"] == 10
    await layer.flush()


@pytest.fixture
def redis_layer(redis_url, settings):
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "project.layers.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": redis_url}]},
        }
    }
    channel_layers.backends.clear()
    yield channel_layers["default"]
    channel_layers.backends.clear()


async def test_a_follower_that_timed_out_waiting_still_gets_the_next_message(redis_layer):
    from chat.turns.broadcast import group_send, subscribe

    group = f"quiet-{uuid.uuid4().hex}"
    witness = await redis_layer.new_channel()
    await redis_layer.group_add(group, witness)
    async with subscribe(group) as inbox:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await inbox.get()
        await group_send(group, {"type": "turn.event", "n": 1})
        async with asyncio.timeout(5):
            # Once the witness has it, the layer has routed it to every member.
            assert (await redis_layer.receive(witness))["n"] == 1
            assert (await inbox.get())["n"] == 1
    await redis_layer.flush()


async def test_a_follower_that_leaves_leaves_nothing_subscribed(redis_layer, redis_url):
    from chat.turns.broadcast import subscribe

    group = f"left-{uuid.uuid4().hex}"
    async with subscribe(group) as inbox:
        channel = inbox.channel
        assert await subscribers(redis_url, channel) == 1
    assert await subscribers(redis_url, channel) == 0
    assert await subscribers(redis_url, f"asgi__group__{group}") == 0
    assert channel not in redis_layer._get_layer().channels
    await redis_layer.flush()
