"""A turn the user started is never silently lost, and every failure is explained."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed
from activity.writing.recorder import FeedRecorder
from chat.models import Conversation, Message
from chat.turns import registry
from tests.support import QUESTION
from tests.support.matching import found
from tests.support.rows import answer_feed_id
from tests.support.sockets import (
    ask,
    final_render,
    finish_turns,
    frames_until_done,
    json_until_done,
    live_render,
    next_frame,
    open_socket,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def until(socket, needle: str, limit: float = 10) -> list[str]:
    frames: list[str] = []
    async with asyncio.timeout(limit):
        while needle not in (frames[-1] if frames else ""):
            frames.append(await socket.receive_from(timeout=limit))
    return frames


async def test_closing_the_socket_mid_turn_does_not_stop_the_turn(
    gate, alice, alice_conversation, knowledge_base
):
    held = gate(after=5, request=2)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    await held.reached.wait()
    await socket.disconnect()
    held.open()
    await finish_turns()
    answer = await Message.objects.aget(role="assistant")
    assert answer.state == Message.State.COMPLETE
    assert "Salary negotiation" in answer.content


async def test_a_new_tab_mid_turn_gets_every_line_and_all_the_text_exactly_once(
    settings, gate, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_TEXT_FLUSH_CHARS = 100_000  # nothing of the text is in the database yet
    held = gate(after=20, request=2)
    first = await open_socket(alice_conversation, alice)
    await ask(first, QUESTION)
    await held.reached.wait()  # some text has streamed
    late = await open_socket(alice_conversation, alice)
    # The snapshot is read after the socket opens: while the turn is still held.
    frames = [await late.receive_from(timeout=5)]
    held.open()
    frames += await frames_until_done(late)
    await frames_until_done(first)
    await finish_turns()
    await first.disconnect()
    await late.disconnect()

    snapshot = frames[0]
    assert "state-streaming" in snapshot and "Here is what the knowledge base says" in snapshot
    # The snapshot's blocks and tail, then the live blocks: the final answer, block for block.
    assert live_render(frames) == final_render(frames)
    line_ids = re.findall(r'<li id="(line-[^"]+)"', "".join(frames[:-1]))
    assert len(line_ids) == len(set(line_ids))


async def test_a_new_tab_whose_snapshot_is_read_as_the_turn_ends_shows_it_ended_with_its_text(
    settings, monkeypatch, gate, alice, alice_conversation, knowledge_base
):
    from chat.conversations import selectors

    settings.GLASSBOX_TEXT_FLUSH_CHARS = 100_000  # the text reaches the database at the end
    held = gate(after=20, request=2)
    first = await open_socket(alice_conversation, alice)
    await ask(first, QUESTION)
    await held.reached.wait()
    read_events = selectors.aevents_by_feed
    ended_meanwhile = asyncio.Event()

    async def events_after_the_end(feed_ids):
        # The new tab has read the answer's row (still streaming); the turn ends before its
        # events are read.
        if not ended_meanwhile.is_set():
            ended_meanwhile.set()
            held.open()
            await frames_until_done(first)
            await finish_turns()
        return await read_events(feed_ids)

    monkeypatch.setattr(selectors, "aevents_by_feed", events_after_the_end)
    late = await open_socket(alice_conversation, alice)
    snapshot = await late.receive_from(timeout=5)
    assert ended_meanwhile.is_set()
    await first.disconnect()
    await late.disconnect()
    # Not the lines with no text and still streaming: the whole answer, as it ended.
    assert "state-complete" in snapshot and "state-streaming" not in snapshot
    assert "Salary negotiation" in snapshot


async def test_a_new_tab_whose_snapshot_is_read_as_a_commit_lands_shows_every_line(
    settings, monkeypatch, gate, alice, alice_conversation, knowledge_base
):
    from chat.conversations import selectors

    settings.GLASSBOX_COMMIT_SECONDS = 60  # the lines stay in this process until asked for
    held = gate(after=5, request=2)
    first = await open_socket(alice_conversation, alice)
    await ask(first, QUESTION)
    await held.reached.wait()
    read_events = selectors.aevents_by_feed
    committed = asyncio.Event()

    async def events_then_a_commit(feed_ids):
        # The new tab has read the stored lines; the pending ones land before it asks for them.
        stored = await read_events(feed_ids)
        if not committed.is_set():
            committed.set()
            recorder = registry._feeds[answer.pk]
            assert isinstance(recorder, FeedRecorder)
            await recorder.write()
        return stored

    answer = await Message.objects.aget(role="assistant")
    monkeypatch.setattr(selectors, "aevents_by_feed", events_then_a_commit)
    late = await open_socket(alice_conversation, alice)
    snapshot = await late.receive_from(timeout=5)
    held.open()
    later = await frames_until_done(late)
    await frames_until_done(first)
    await finish_turns()
    await first.disconnect()
    await late.disconnect()

    assert committed.is_set()
    assert "📄" in snapshot and "✍️" in snapshot  # read again, not lost between the two reads
    assert all("📄" not in frame for frame in later[:-1])


async def test_stop_keeps_the_partial_answer_and_records_a_stopped_line(
    gate, alice, alice_conversation, knowledge_base
):
    held = gate(after=20, request=2)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    frames = await until(socket, "-tail")
    await held.reached.wait()
    answer_id = int(found(r"answer-(\d+)-tail", frames[-1]))
    assert 'name="stop"' in "".join(frames)  # the Stop button is on the page
    await socket.send_to(text_data=json.dumps({"stop": str(answer_id)}))
    final = (await frames_until_done(socket))[-1]
    await finish_turns()
    await socket.disconnect()
    answer = await Message.objects.select_related("feed").aget(pk=answer_id)
    # Stopped, as its owner asked: neither failed nor taken for a dead process's turn.
    assert answer.state == Message.State.STOPPED
    assert answer.answer_feed.state == ActivityFeed.State.STOPPED
    assert answer.content and "Salary negotiation: during" not in answer.content
    assert answer.content.startswith("Here is what the knowledge base says:")
    assert "Here is what the knowledge base says:" in final  # kept, and shown
    last = await ActivityEvent.objects.filter(feed_id=answer.feed_id).order_by("-seq").afirst()
    assert last is not None
    assert (last.icon, last.message, last.state) == ("⏹", "Stopped", "done")
    assert (answer.answer_feed.summary_icon, answer.answer_feed.summary_text) == ("⏹", "Stopped")
    assert "state-stopped" in final and "state-interrupted" not in final
    stop_line = re.search(
        r'<li id="line-\d+-[^"]*" class="line ([^"]*)"[^>]*>(?:(?!</li>).)*⏹', final, re.S
    )
    assert stop_line and stop_line.group(1) == "state-done"
    assert "state-failed" not in final  # nothing on the page reads as a failure
    # A screen reader hears that what was saved is kept, never more than was.
    assert "The answer was stopped; what was saved is kept." in final


async def test_a_stop_from_another_process_is_seen_at_the_next_heartbeat(
    settings, gate, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.05
    held = gate(after=20, request=2)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    await held.reached.wait()
    answer = await Message.objects.aget(role="assistant")
    # What turns.stop does when the turn runs elsewhere: only the flag changes.
    await ActivityFeed.objects.filter(pk=answer_feed_id(answer)).aupdate(stop_requested=True)
    await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    await answer.arefresh_from_db()
    assert answer.state == Message.State.STOPPED
    last = await ActivityEvent.objects.filter(feed_id=answer.feed_id).order_by("-seq").afirst()
    assert last is not None
    assert (last.icon, last.state) == ("⏹", "done")


async def test_a_turn_cancelled_by_anything_but_its_owners_stop_ends_interrupted(
    gate, alice, alice_conversation, knowledge_base
):
    """Its event loop shutting down under it cancels its task as a Stop does: the server
    stopped it, not its owner, and it ends as a dead process's turn does."""
    held = gate(after=20, request=2)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, QUESTION)
    await held.reached.wait()
    answer = await Message.objects.aget(role="assistant")
    (task,) = [t for t in asyncio.all_tasks() if t.get_name() == f"turn-{answer.pk}"]
    task.cancel()
    events = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    await answer.arefresh_from_db()
    assert answer.state == Message.State.INTERRUPTED and answer.content
    feed = await ActivityFeed.objects.aget(pk=answer_feed_id(answer))
    assert (feed.state, feed.summary_icon) == ("interrupted", "⚠️")
    last = [e for e in events if e["type"] == "status"][-1]
    assert (last["icon"], last["state"]) == ("⚠️", "failed")
    assert events[-1]["type"] == "done" and events[-1]["state"] == "interrupted"


async def test_a_commit_the_database_refuses_is_written_with_the_next_and_the_turn_stays_alive(
    settings, monkeypatch, gate, alice, alice_conversation, knowledge_base
):
    from django.db import OperationalError

    from activity.writing import commits

    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.05
    settings.GLASSBOX_TEXT_FLUSH_CHARS = 100_000  # the text is written by the commits only
    write_all, written_after = commits._write_all, asyncio.Event()
    loop = asyncio.get_running_loop()
    refusing: list[bool] = []

    def refused_once(parts):
        if refusing == [True]:
            refusing.append(False)
            raise OperationalError("database is locked")
        written = write_all(parts)
        if len(refusing) == 2 and any(part.rides for part in parts):
            # Commits run one after another: the one after the refusal has the text.
            loop.call_soon_threadsafe(written_after.set)
        return written

    monkeypatch.setattr(commits, "_write_all", refused_once)
    held = gate(after=20, request=2)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    await held.reached.wait()
    refusing.append(True)
    async with asyncio.timeout(5):
        await written_after.wait()  # a later commit wrote what the refused one had
    answer = await Message.objects.select_related("feed").aget(role="assistant")
    # Proven alive and its lines and text so far on disk, though one commit failed.
    assert answer.answer_feed.heartbeat_at is not None and answer.content
    assert await ActivityEvent.objects.filter(feed_id=answer.feed_id).acount() >= 2
    held.open()
    await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    await answer.arefresh_from_db()
    assert answer.state == Message.State.COMPLETE and "Salary negotiation" in answer.content
    seqs = [
        seq
        async for seq in ActivityEvent.objects.filter(feed_id=answer.feed_id)
        .order_by("seq")
        .values_list("seq", flat=True)
    ]
    assert seqs == list(range(1, len(seqs) + 1))  # every line once, none lost


async def test_stopping_an_answer_that_is_not_running_is_explained(
    alice, alice_conversation, knowledge_base
):
    socket = await open_socket(alice_conversation, alice)
    await socket.send_to(text_data=json.dumps({"stop": "999999"}))
    assert "not running any more" in await socket.receive_from(timeout=5)
    await socket.send_to(text_data=json.dumps({"stop": "x"}))
    assert "needs the id of the answer" in await socket.receive_from(timeout=5)
    await socket.disconnect()


async def test_a_repeated_client_id_on_the_socket_joins_instead_of_asking_twice(
    gate, alice, alice_conversation, knowledge_base
):
    held = gate(after=3)
    socket = await open_socket(alice_conversation, alice)
    payload = json.dumps(
        {"message": QUESTION, "client_id": "8b9cad0e-1d21-4b5c-9d1e-1f0a2b3c4d5e"}
    )
    await socket.send_to(text_data=payload)
    await held.reached.wait()
    await socket.send_to(text_data=payload)
    held.open()
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert await Message.objects.acount() == 2
    assert not any("notice" in f and "still working" in f for f in frames)


async def test_the_per_user_rate_limit_is_explained(
    settings, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_TURNS_PER_MINUTE = 2
    socket = await open_socket(alice_conversation, alice)
    for _ in range(2):
        await ask(socket, "Tell me a joke")
        await frames_until_done(socket)
    await ask(socket, "Tell me a joke")
    notice = await socket.receive_from(timeout=5)
    await finish_turns()
    await socket.disconnect()
    assert "asked 2 questions in the last minute" in notice
    assert await Message.objects.filter(role="user").acount() == 2


async def test_the_per_user_cap_on_running_turns_is_explained(
    settings, gate, alice, knowledge_base
):
    settings.GLASSBOX_MAX_CONCURRENT_TURNS = 1
    held = gate(after=3)
    first_conversation = await Conversation.objects.acreate(owner=alice)
    second_conversation = await Conversation.objects.acreate(owner=alice)
    first = await open_socket(first_conversation, alice)
    second = await open_socket(second_conversation, alice)
    await ask(first, QUESTION)
    await held.reached.wait()
    await ask(second, "Tell me a joke")
    notice = await next_frame(second)
    held.open()
    await frames_until_done(first)
    await finish_turns()
    await first.disconnect()
    await second.disconnect()
    assert "You already have 1 answer in progress; wait for it to finish" in notice


async def test_a_flood_closes_that_socket_and_others_keep_being_served(
    alice, bob, alice_conversation, knowledge_base
):
    bobs = await Conversation.objects.acreate(owner=bob)
    flooder = await open_socket(alice_conversation, alice)
    for _ in range(25):
        await flooder.send_to(text_data="{}")
    closed = None
    async with asyncio.timeout(5):
        while closed is None:
            output = await flooder.receive_output(timeout=5)
            if output["type"] == "websocket.close":
                closed = output["code"]
    assert closed == 4429
    other = await open_socket(bobs, bob)
    await ask(other, "Tell me a joke")
    assert "state-complete" in (await frames_until_done(other))[-1]
    await finish_turns()
    await other.disconnect()


async def test_a_conversation_that_stops_being_yours_closes_your_socket(
    alice, bob, alice_conversation
):
    socket = await open_socket(alice_conversation, alice)
    await Conversation.objects.filter(pk=alice_conversation.pk).aupdate(owner=bob)
    await ask(socket, "Tell me a joke")
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}
    assert await Message.objects.acount() == 0


async def test_a_cross_site_page_cannot_open_a_socket(alice, alice_conversation):
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator

    from project.asgi import application
    from tests.support.sockets import session_cookie_for

    cookie = await sync_to_async(session_cookie_for)(alice)
    socket = WebsocketCommunicator(
        application,
        f"/ws/c/{alice_conversation.pk}/",
        headers=[
            (b"origin", b"https://evil.example"),
            (b"host", b"127.0.0.1"),
            (b"cookie", cookie),
        ],
    )
    connected, _ = await socket.connect()
    assert not connected
    assert registry.running() == []


async def test_logging_out_closes_that_sessions_sockets(alice, alice_conversation):
    from channels.testing import WebsocketCommunicator
    from django.test import AsyncClient

    from project.asgi import application

    browser = AsyncClient()
    await browser.aforce_login(alice)
    cookie = f"sessionid={browser.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(
        application,
        f"/ws/c/{alice_conversation.pk}/",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)],
    )
    assert (await socket.connect())[0]
    await browser.post("/accounts/logout/")
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


@pytest.mark.parametrize("revoke", ["password changed", "user deactivated", "sessions deleted"])
async def test_a_socket_whose_login_was_revoked_starts_nothing(alice, alice_conversation, revoke):
    socket = await open_socket(alice_conversation, alice)
    if revoke == "password changed":
        alice.set_password("a new one")
        await alice.asave()
    elif revoke == "user deactivated":
        alice.is_active = False
        await alice.asave()
    else:
        await Session.objects.all().adelete()
    await ask(socket, "Tell me a joke")
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}
    assert await Message.objects.acount() == 0


async def test_a_login_session_that_changed_but_stands_still_lets_the_socket_ask(
    alice, alice_conversation
):
    """Each question checks the login session again; a session whose data changed for
    another reason (another tab stored something in it) is verified afresh, not refused."""
    from django.contrib.sessions.backends.db import SessionStore

    socket = await open_socket(alice_conversation, alice)
    await ask(socket, "Tell me a joke")
    await frames_until_done(socket)
    await finish_turns()
    row = await Session.objects.aget()
    store = SessionStore(row.session_key)
    await store.aset("seen_the_tour", True)
    await store.asave()
    assert (await Session.objects.aget()).session_data != row.session_data

    await ask(socket, "Tell me another joke")
    await frames_until_done(socket)
    await finish_turns()
    assert await Message.objects.filter(role=Message.Role.ASSISTANT).acount() == 2

    alice_conversation.deleted_at = timezone.now()
    await alice_conversation.asave()
    await ask(socket, "And a third")
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}
    assert await Message.objects.acount() == 4


async def test_a_process_that_is_restarting_takes_no_new_question(
    alice, alice_conversation, monkeypatch
):
    monkeypatch.setattr(registry, "_draining", True)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, "Tell me a joke")
    notice = await socket.receive_from(timeout=5)
    await socket.disconnect()
    assert "The server is restarting; ask again in a moment." in notice
    assert await Message.objects.acount() == 0
