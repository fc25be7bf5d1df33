"""A socket speaks the wire its subprotocol asks for (chat.socket.wires): a program's socket and
its SSE stream send one turn as the same frames, every frame type a program can get is
declared in docs/api.md, and what is not a turn's event takes the socket's form too."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from pathlib import Path

import pytest
from channels.layers import get_channel_layer

from activity.recording.events import WIRE_TYPES
from chat.turns.broadcast import sidebar_group
from chat.turns.registry import finish_all
from tests.support.api import ask, client_for, sse_events
from tests.support.layer_groups import group_size
from tests.support.sockets import json_until_done, open_socket

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def without_text(frames: list[dict]) -> list[dict]:
    return [frame for frame in frames if frame["type"] != "text"]


def text_of(frames: list[dict]) -> str:
    return "".join(frame["content"] for frame in frames if frame["type"] == "text")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_one_turn_is_the_same_frames_on_a_programs_socket_and_over_sse(
    alice, alice_conversation, knowledge_base, gate
):
    held = gate(after=0)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    response = await ask(await client_for(alice), alice_conversation)
    streamed, shown = await asyncio.gather(
        sse_events(response, held=held), json_until_done(socket)
    )
    await finish_all()
    await socket.disconnect()
    # Text comes in as many pieces as the layer had when each follower read it.
    assert without_text(shown) == without_text(streamed)
    assert text_of(shown) == text_of(streamed) != ""
    assert [f["type"] for f in shown][:2] == ["turn", "status"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_only_a_pages_socket_is_cued_when_another_conversation_changes(
    alice, alice_conversation
):
    page = await open_socket(alice_conversation, alice)
    program = await open_socket(alice_conversation, alice, as_json=True)
    other = {"type": "conversations.changed", "conversation": str(uuid.uuid4())}
    layer = get_channel_layer()
    assert layer is not None
    # A program's socket is not even woken: thousands of a user's idle programs cost
    # nothing when one of their conversations starts a turn.
    assert await group_size(layer, sidebar_group(alice.pk)) == 1
    await layer.group_send(sidebar_group(alice.pk), other)
    assert 'id="sidebar-stale"' in await page.receive_from(timeout=5)
    # A program hears nothing of it: the next frame it gets answers what it sends after.
    await program.send_to(text_data="not json")
    refusal = json.loads(await program.receive_from(timeout=5))
    assert refusal["type"] == "error"
    await page.send_to(text_data="not json")
    assert 'id="notice"' in await page.receive_from(timeout=5)
    await page.disconnect()
    await program.disconnect()


def test_every_frame_type_a_program_can_get_is_declared_in_the_api_docs():
    doc = API_DOC.read_text()
    table = doc[doc.index("Every frame a program can get") :]
    table = table[: table.index("\n\n", table.index("| `type` |"))]
    declared = set(re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)) - {"type"}
    # The turn's events, the `label` of progress mode, and the socket's question cards.
    assert declared == {*WIRE_TYPES, "label", "questions"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_screen_closed_while_a_snapshot_was_on_its_way_follows_no_turn(
    alice, alice_conversation, knowledge_base, gate
):
    """A socket ends (its right gone, its follower failed) while it was reading a turn to
    show: the turn is not followed for a socket that shows nothing more."""
    from activity.preferences.feed_prefs import FeedPrefs
    from chat.models import Message
    from chat.socket.viewer import Screen
    from chat.socket.wires import ProgramSocketWire

    held = gate(after=2)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": "How do I negotiate my salary?"}))
    await held.reached.wait()
    answer = await Message.objects.aget(role="assistant")
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    async def failed() -> None:
        raise AssertionError("nothing failed")

    screen = Screen(
        conversation_id=alice_conversation.pk, send=send, wire=ProgramSocketWire(), failed=failed
    )
    joining = asyncio.create_task(screen.join(answer.pk, FeedPrefs()))
    await asyncio.sleep(0)  # the snapshot is on its way
    screen.close()
    await joining
    assert not screen.shows(answer.pk)
    held.open()
    await json_until_done(socket)
    await finish_all()
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_socket_that_cannot_show_its_turn_closes_for_its_client_to_reconnect(
    alice, alice_conversation, knowledge_base, monkeypatch, caplog
):
    """A frame that cannot be drawn (a bug, not the database): the socket closes as a server
    error, which clients answer by reconnecting, the error is logged with its traceback, and
    the turn goes on for whoever else shows it."""
    from activity.recording.events import Status
    from chat.models import Message
    from chat.socket.wires import ProgramTurnWire

    frames = ProgramTurnWire.frames

    def drawn(self, event):
        if isinstance(event, Status):
            raise RuntimeError("a frame that cannot be drawn")
        return frames(self, event)

    monkeypatch.setattr(ProgramTurnWire, "frames", drawn)
    caplog.set_level(logging.WARNING, logger="glassbox.sockets")
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": "How do I negotiate my salary?"}))
    async with asyncio.timeout(10):
        while (output := await socket.receive_output(timeout=10))["type"] != "websocket.close":
            assert json.loads(output["text"])["type"] != "status"
    assert output["code"] == 1011
    [said] = [r for r in caplog.records if "could not show turn" in r.getMessage()]
    assert said.levelno == logging.ERROR and "reconnect" in said.getMessage()
    assert said.exc_info is not None and str(said.exc_info[1]) == "a frame that cannot be drawn"
    await finish_all()
    answer = await Message.objects.aget(role="assistant")
    assert answer.state == "complete" and answer.content
