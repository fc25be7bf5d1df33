"""One wire format and one way to follow a turn, whichever way a program listens."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from activity.models import ActivityFeed
from activity.recording.events import Status, to_json, with_seq
from chat.models import Message
from chat.socket import reads
from chat.turns import follow
from chat.turns.admission import admit
from chat.turns.broadcast import send_turn_event
from chat.turns.recovery import GRACE_BEATS
from chat.turns.registry import finish_all
from tests.support import QUESTION
from tests.support.api import ask, client_for, sse_events
from tests.support.rows import answer_feed_id
from tests.support.sockets import json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def merged(events: list[dict]) -> list[dict]:
    """Text frames joined: how text is cut into frames is a transport's business."""
    out: list[dict] = []
    for event in events:
        if event["type"] == "text" and out and out[-1]["type"] == "text":
            out[-1] = {"type": "text", "content": out[-1]["content"] + event["content"]}
        else:
            out.append(dict(event))
    return out


async def test_one_turn_gives_the_same_events_over_the_socket_and_over_sse(
    alice, alice_conversation, knowledge_base, gate
):
    socket = await open_socket(alice_conversation, alice, as_json=True)
    held = gate(after=0)
    response = await ask(await client_for(alice), alice_conversation)
    over_sse = await sse_events(response, held=held)
    over_socket = await json_until_done(socket)
    await finish_all()
    await socket.disconnect()

    assert merged(over_socket) == merged(over_sse)
    question, answer = [m async for m in Message.objects.order_by("id")]
    assert over_sse[0] == {
        "type": "turn",
        "question_id": str(question.pk),
        "message_id": str(answer.pk),
    }
    assert over_sse[-1]["message_id"] == str(answer.pk)
    assert [e["type"] for e in merged(over_sse)] == [
        "turn", "status", "status", "tool_feedback", "tool_call", "tool_result", "status",
        "status", "text", "status", "done",
    ]  # fmt: skip


async def test_a_refusal_is_the_same_error_event_over_the_socket_and_over_sse(
    alice, alice_conversation
):
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": "   "}))
    over_socket = json.loads(await socket.receive_from(timeout=5))
    await socket.disconnect()
    response = await ask(await client_for(alice), alice_conversation, content="   ")

    assert response.status_code == 400
    assert over_socket == {"type": "error", "message": "Type a question first."}
    assert response.content.decode() == f"event: error\ndata: {json.dumps(over_socket)}\n\n"


async def dead_turn(conversation, client_id: uuid.UUID, silent_for: float):
    """The rows a process leaves when it dies mid-turn: a streaming answer nobody runs."""
    turn = await sync_to_async(admit)(
        conversation=conversation, text=QUESTION, client_id=client_id
    )
    since = timezone.now() - timedelta(seconds=silent_for)
    await ActivityFeed.objects.filter(pk=answer_feed_id(turn.answer)).aupdate(
        started_at=since, heartbeat_at=since
    )
    return turn.answer


async def test_an_sse_client_joining_a_turn_whose_process_died_gets_it_interrupted(
    settings, alice, alice_conversation, knowledge_base
):
    # The follower judges the turn after QUIET_BEATS without a line; waiting out a whole
    # grace would take GRACE_BEATS. Beats of 1.5 s leave a loaded machine 3 s between them
    # (the past silence costs no time).
    settings.GLASSBOX_HEARTBEAT_SECONDS = 1.5
    client_id = uuid.uuid4()
    answer = await dead_turn(alice_conversation, client_id, silent_for=GRACE_BEATS * 1.5 + 1)
    client = await client_for(alice)
    started = time.monotonic()
    async with asyncio.timeout(10):
        events = await sse_events(await ask(client, alice_conversation, client_id=str(client_id)))
    assert time.monotonic() - started < GRACE_BEATS * settings.GLASSBOX_HEARTBEAT_SECONDS
    assert events[0]["message_id"] == str(answer.pk)
    assert (events[-2]["icon"], events[-2]["message"]) == (
        "⚠️",
        "Interrupted: the server stopped while working",
    )
    assert events[-1]["state"] == "interrupted"
    await answer.arefresh_from_db()
    assert answer.state == Message.State.INTERRUPTED


async def test_an_sse_client_following_a_turn_whose_process_dies_is_told_it_ended(
    settings, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.1
    client_id = uuid.uuid4()
    # Alive when the client joins; it never beats again.
    answer = await dead_turn(alice_conversation, client_id, silent_for=0)
    async with asyncio.timeout(10):
        events = await sse_events(
            await ask(await client_for(alice), alice_conversation, client_id=str(client_id))
        )
    assert events[-1] == {
        "type": "done",
        "message_id": str(answer.pk),
        "state": "interrupted",
        "summary": {"icon": "⚠️", "text": "Interrupted: the server stopped while working"},
    }


async def test_a_socket_that_saw_lines_the_dead_process_never_wrote_still_sees_it_end(
    settings, alice, alice_conversation, knowledge_base, monkeypatch
):
    """Lines are shown before they are written. When the process dies in between, the ⚠️
    line that closes the turn must not take the seq of one the client already has."""
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.1
    seen = threading.Event()
    recover = follow.dead_turns_recover

    def once_the_line_was_seen(**scope):
        seen.wait(10)  # the turn dies only after the client has its unwritten line
        return recover(**scope)

    monkeypatch.setattr(follow, "dead_turns_recover", once_the_line_was_seen)
    # Nor as the socket opens, however long a busy machine takes to open it.
    monkeypatch.setattr(reads, "dead_turns_recover", lambda **scope: 0)
    answer = await dead_turn(alice_conversation, uuid.uuid4(), silent_for=0)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    assert json.loads(await socket.receive_from(timeout=5))["type"] == "turn"
    shown = with_seq(Status(icon="🔍", message="Looking up salary", state="in_progress"), 1)
    await send_turn_event(alice_conversation.group_name, answer_id=answer.pk, event=to_json(shown))
    first = json.loads(await socket.receive_from(timeout=5))
    seen.set()
    events = [first, *await json_until_done(socket)]
    await socket.disconnect()

    lines = [(e["seq"], e["icon"]) for e in events if e["type"] == "status"]
    assert lines[0] == (1, "🔍") and lines[-1][1] == "⚠️" and lines[-1][0] > 1
    assert events[-1]["state"] == "interrupted"


async def test_a_program_that_connects_mid_turn_gets_the_whole_turn_once(
    settings, gate, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_TEXT_FLUSH_CHARS = 100_000  # the text so far is only in memory
    held = gate(after=12, request=2)
    early = await open_socket(alice_conversation, alice, as_json=True)
    await early.send_to(text_data=json.dumps({"message": QUESTION}))
    await held.reached.wait()
    late = await open_socket(alice_conversation, alice, as_json=True)
    joined = [json.loads(await late.receive_from(timeout=5))]  # the snapshot was read
    held.open()
    from_start, from_middle = await json_until_done(early), joined + await json_until_done(late)
    await finish_all()
    await early.disconnect()
    await late.disconnect()
    assert merged(from_middle) == merged(from_start)
