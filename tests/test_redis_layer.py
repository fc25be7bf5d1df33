"""The channel layer between processes (project.redis_layer.RedisPubSubChannelLayer) on a real
Redis: a member hears what is published as soon as it has joined, a stalled channel drops
only its own overflow, publishes asked for together travel together and in order, a publish
whose connection breaks goes once more on a fresh one, a Redis that is gone fails every
publish waiting for it, and a follower that times out or leaves loses nothing and leaves
nothing behind. Needs REDIS_URL, which .ci/run provides; skipped without it unless
REQUIRE_SERVICES=1."""

from __future__ import annotations

import asyncio
import contextlib
import os
import urllib.parse
import uuid

import pytest
import redis.asyncio as redis
from redis.exceptions import ConnectionError as RedisUnreachable

from project.redis_layer import RedisPubSubChannelLayer

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
            "BACKEND": "project.redis_layer.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": redis_url}]},
        }
    }
    channel_layers.backends.clear()
    yield channel_layers["default"]
    channel_layers.backends.clear()


async def test_a_follower_that_timed_out_waiting_still_gets_the_next_message(redis_layer):
    from project.groups import group_send, subscribe

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
    from project.groups import subscribe

    group = f"left-{uuid.uuid4().hex}"
    async with subscribe(group) as inbox:
        channel = inbox.channel
        assert await subscribers(redis_url, channel) == 1
    assert await subscribers(redis_url, channel) == 0
    assert await subscribers(redis_url, f"asgi__group__{group}") == 0
    assert channel not in redis_layer._get_layer().channels
    await redis_layer.flush()


class HeldReplies:
    """A TCP proxy to Redis that passes every command on at once and holds Redis's replies
    while `held`: what a process sends before it has heard back shows in `commands`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.sent = bytearray()
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.arrived = asyncio.Condition()
        self.pumps: set[asyncio.Task] = set()
        self.writers: list[asyncio.StreamWriter] = []
        self.refusing = False

    def commands(self, name: bytes) -> int:
        return self.sent.count(b"\r\n" + name + b"\r\n")

    async def until(self, name: bytes, count: int) -> None:
        async with self.arrived:
            await self.arrived.wait_for(lambda: self.commands(name) >= count)

    async def connected(self, reader, writer) -> None:
        if self.refusing:  # Redis is down: a new connection is closed at once
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        self.writers += [writer, upstream_writer]
        for pump in (
            self._commands(reader, upstream_writer),
            self._replies(upstream_reader, writer),
        ):
            task = asyncio.create_task(pump)
            self.pumps.add(task)
            task.add_done_callback(self.pumps.discard)

    async def _commands(self, reader, writer) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            async with self.arrived:
                self.sent += data
                self.arrived.notify_all()
        writer.close()

    def cut(self) -> None:
        """Every connection through the proxy breaks, as when Redis goes away."""
        for pump in list(self.pumps):
            pump.cancel()
        for writer in self.writers:
            writer.close()
        self.writers.clear()

    async def _replies(self, reader, writer) -> None:
        while data := await reader.read(65536):
            await self.flowing.wait()
            writer.write(data)
        writer.close()


@contextlib.asynccontextmanager
async def held_replies(url: str):
    parsed = urllib.parse.urlsplit(url)
    proxy = HeldReplies((parsed.hostname or "127.0.0.1", parsed.port or 6379))
    server = await asyncio.start_server(proxy.connected, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield proxy, urllib.parse.urlunsplit(parsed._replace(netloc=f"127.0.0.1:{port}"))
    finally:
        proxy.flowing.set()
        server.close()
        proxy.cut()


async def test_publishes_asked_for_while_one_is_on_its_way_leave_together(redis_url):
    async with held_replies(redis_url) as (proxy, url):
        layer = layer_for(url)
        await layer.group_send("warm-up", {"type": "turn.event"})  # the connection is set up
        proxy.flowing.clear()
        sends = [
            asyncio.create_task(layer.group_send(f"turn-{n}", {"type": "turn.event", "n": n}))
            for n in range(50)
        ]
        # Redis has not answered any of them: each was sent without waiting for another's
        # round trip (the stock layer sends the next only once the last is answered).
        async with asyncio.timeout(5):
            await proxy.until(b"PUBLISH", 1 + 50)
        assert not any(send.done() for send in sends)  # each returns once Redis has it
        proxy.flowing.set()
        async with asyncio.timeout(5):
            await asyncio.gather(*sends)
        await layer.flush()


async def test_many_turns_publishing_at_once_reach_their_members_in_order(redis_url):
    layer = layer_for(redis_url)
    groups = [f"order-{uuid.uuid4().hex}" for _ in range(20)]
    members = [await layer.new_channel() for _ in groups]
    for group, member in zip(groups, members, strict=True):
        await layer.group_add(group, member)

    async def turn(group: str) -> None:
        for n in range(30):
            await layer.group_send(group, {"type": "turn.event", "n": n})

    async with asyncio.timeout(20):
        await asyncio.gather(*(turn(group) for group in groups))
        for member in members:
            assert [(await layer.receive(member))["n"] for _ in range(30)] == list(range(30))
    await layer.flush()


async def test_a_publish_whose_connection_breaks_goes_once_more_on_a_fresh_one(redis_url):
    async with held_replies(redis_url) as (proxy, url):
        layer = layer_for(url)
        await layer.group_send("warm-up", {"type": "turn.event"})
        proxy.flowing.clear()
        sends = [
            asyncio.create_task(layer.group_send(f"again-{n}", {"type": "turn.event"}))
            for n in range(5)
        ]
        async with asyncio.timeout(5):
            await proxy.until(b"PUBLISH", 1 + 5)
            proxy.flowing.set()
            proxy.cut()  # the connection breaks before Redis answers
            assert await asyncio.gather(*sends) == [None] * 5
        assert proxy.commands(b"PUBLISH") == 1 + 5 + 5  # all of them again, on a new one
        await layer.flush()


async def test_when_redis_is_gone_every_waiting_publish_fails_and_the_next_tries_again(
    redis_url,
):
    async with held_replies(redis_url) as (proxy, url):
        layer = layer_for(url)
        await layer.group_send("warm-up", {"type": "turn.event"})
        proxy.flowing.clear()
        sends = [
            asyncio.create_task(layer.group_send(f"gone-{n}", {"type": "turn.event"}))
            for n in range(5)
        ]
        async with asyncio.timeout(5):
            await proxy.until(b"PUBLISH", 1 + 5)
            proxy.refusing = True
            proxy.cut()  # Redis goes away before it answers, and refuses the second try
            results = await asyncio.gather(*sends, return_exceptions=True)
        assert all(isinstance(result, RedisUnreachable) for result in results), results
        # Redis is back: the same layer connects again for the next publish.
        proxy.refusing = False
        proxy.flowing.set()
        group = f"back-{uuid.uuid4().hex}"
        member = await layer.new_channel()
        await layer.group_add(group, member)
        await layer.group_send(group, {"type": "turn.event", "n": 1})
        async with asyncio.timeout(5):
            assert (await layer.receive(member))["n"] == 1
        await layer.flush()
