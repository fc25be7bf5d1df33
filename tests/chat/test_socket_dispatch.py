"""A socket's messages, in order, while its consumer is busy: what queues behind a slow
handler, what a full inbox drops (and the page still gets), and a channel layer that fails."""

from __future__ import annotations

import asyncio
import logging

import pytest
from channels.layers import get_channel_layer

from chat.socket import reads
from tests.support import QUESTION
from tests.support.sockets import (
    ask,
    connect,
    final_render,
    finish_turns,
    frames_until_done,
    line_icons,
    live_render,
    open_socket,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


class Held:
    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.released = asyncio.Event()


@pytest.fixture
def card_read_held(monkeypatch):
    """Holds the read of a new turn's card (the socket's turn_started handler, which runs
    once the turn is launched) until released."""
    held = Held()
    original = reads.new_turn

    async def read(*args):
        held.reached.set()
        await held.released.wait()
        return await original(*args)

    monkeypatch.setattr(reads, "new_turn", read)
    return held


async def test_a_turn_that_runs_while_its_card_is_read_is_shown_whole_and_in_order(
    alice, alice_conversation, knowledge_base, card_read_held
):
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    await card_read_held.reached.wait()
    await finish_turns()  # every line and frame of the turn waits behind the card's read
    card_read_held.released.set()
    frames = await frames_until_done(socket)
    await socket.disconnect()

    assert QUESTION in frames[0]
    icons = line_icons(frames)
    assert icons[: icons.index("text")] == ["🔍", "🔍", "📄", "✍️"]
    assert [icon for icon in icons if icon != "text"][-1] == "✅"
    assert live_render(frames) == final_render(frames)
    assert "Searched the knowledge base" in frames[-1]


async def test_what_a_full_inbox_drops_the_page_still_gets(
    settings, alice, alice_conversation, knowledge_base, card_read_held, caplog
):
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.2  # a follower missing `done` looks it up sooner
    settings.CHANNEL_CAPACITY = 2
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    await card_read_held.reached.wait()
    with caplog.at_level(logging.WARNING, logger="glassbox.socket"):
        await finish_turns()  # its `done` too is dropped: the viewer finds the end stored
    card_read_held.released.set()
    frames = await frames_until_done(socket)
    await socket.disconnect()

    assert any("was dropped" in record.message for record in caplog.records)
    assert QUESTION in frames[0]
    final = frames[-1]
    assert "Searched the knowledge base" in final
    assert "<strong>Salary negotiation: preparing your number</strong>" in final


async def test_a_channel_layer_that_fails_ends_the_socket_with_its_error(
    alice, alice_conversation, monkeypatch
):
    layer = get_channel_layer()

    async def broken(channel: str) -> dict:
        raise ConnectionError("the channel layer is gone")

    monkeypatch.setattr(layer, "receive", broken)
    socket = await connect(alice_conversation.pk, alice)
    with pytest.raises(ConnectionError, match="the channel layer is gone"):
        await socket.connect()
        await socket.wait(timeout=5)  # the socket's application ends, which closes it
