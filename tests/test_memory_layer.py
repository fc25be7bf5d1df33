"""The single process's channel layer (project.layers.SweptInMemoryChannelLayer) hands each
receiver its own copy of a message, in order, holds no more than its capacity, and lets an
emptied channel go."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import pytest
from channels.exceptions import ChannelFull

from project.layers import SweptInMemoryChannelLayer


@dataclass
class Note:
    words: list[str] = field(default_factory=list)


def test_each_member_of_a_group_gets_its_own_copy_of_what_was_sent():
    async def scenario() -> None:
        layer = SweptInMemoryChannelLayer()
        first, second = await layer.new_channel(), await layer.new_channel()
        for channel in (first, second):
            await layer.group_add("conversation", channel)
        sent = {"type": "turn.event", "event": {"type": "text", "lines": [{"seq": 1}]}}
        await layer.group_send("conversation", sent)
        one, other = await layer.receive(first), await layer.receive(second)
        one["event"]["lines"][0]["seq"] = 99
        one["event"]["type"] = "changed"
        assert (
            other
            == sent
            == {"type": "turn.event", "event": {"type": "text", "lines": [{"seq": 1}]}}
        )
        assert layer.channels == {}

    asyncio.run(scenario())


def test_a_message_holding_other_objects_is_copied_whole():
    async def scenario() -> None:
        layer = SweptInMemoryChannelLayer()
        channel = await layer.new_channel()
        note = Note(["kept"])
        await layer.send(channel, {"type": "x", "pair": ([1], note)})
        got = await layer.receive(channel)
        got["pair"][0].append(2)
        got["pair"][1].words.append("changed")
        assert note.words == ["kept"] and got["pair"][0] == [1, 2]

    asyncio.run(scenario())


def test_messages_arrive_in_order_and_a_full_channel_refuses_more():
    async def scenario() -> None:
        layer = SweptInMemoryChannelLayer(capacity=3)
        channel = await layer.new_channel()
        for n in range(3):
            await layer.send(channel, {"type": "x", "n": n})
        with pytest.raises(ChannelFull):
            await layer.send(channel, {"type": "x", "n": 3})
        assert [(await layer.receive(channel))["n"] for _ in range(3)] == [0, 1, 2]
        assert layer.channels == {}

    asyncio.run(scenario())


def test_a_group_message_skips_a_full_member_and_reaches_the_others():
    async def scenario() -> None:
        layer = SweptInMemoryChannelLayer(capacity=2)
        full, free = await layer.new_channel(), await layer.new_channel()
        for channel in (full, free):
            await layer.group_add("conversation", channel)
        for n in range(2):
            await layer.send(full, {"type": "x", "n": n})
        await layer.group_send("conversation", {"type": "x", "n": "group"})
        assert [(await layer.receive(full))["n"] for _ in range(2)] == [0, 1]
        assert (await layer.receive(free))["n"] == "group"
        assert layer.channels == {}

    asyncio.run(scenario())


def test_a_message_past_its_expiry_is_dropped_within_a_second_and_its_channel_leaves_its_groups():
    async def scenario() -> None:
        layer = SweptInMemoryChannelLayer(expiry=60)
        asleep, awake = await layer.new_channel(), await layer.new_channel()
        for channel in (asleep, awake):
            await layer.group_add("conversation", channel)
        await layer.group_send("conversation", {"type": "turn.event", "n": 1})
        await layer.receive(awake)  # the awake socket reads; the other never does

        # A minute later (the message's expiry moved back rather than the clock on).
        layer.channels[asleep]._queue[0] = (0.0, layer.channels[asleep]._queue[0][1])
        layer._swept_at -= layer.sweep_every
        await layer.group_send("conversation", {"type": "turn.event", "n": 2})

        assert asleep not in layer.channels
        assert set(layer.groups["conversation"]) == {awake}
        assert await layer.receive(awake) == {"type": "turn.event", "n": 2}

    asyncio.run(scenario())


def test_memberships_past_the_group_expiry_are_walked_once_a_minute_not_each_second():
    async def scenario() -> None:
        layer = SweptInMemoryChannelLayer(group_expiry=3600)
        channel = await layer.new_channel()
        await layer.group_add("conversation", channel)
        layer.groups["conversation"][channel] -= 3601  # joined more than an hour ago
        layer._memberships_swept_at = layer._swept_at = time.monotonic()

        layer._swept_at -= layer.sweep_every
        await layer.group_send("conversation", {"type": "turn.event"})
        assert channel in layer.groups["conversation"], "walked with the messages' sweep"
        assert await layer.receive(channel) == {"type": "turn.event"}

        layer._swept_at -= layer.sweep_every
        layer._memberships_swept_at -= layer.memberships_every
        await layer.group_send("conversation", {"type": "turn.event"})
        assert channel not in layer.groups["conversation"]

    asyncio.run(scenario())
