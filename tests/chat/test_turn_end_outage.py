"""PostgreSQL stopped and started again across a turn's end (a restart, a failover): the
end is retried, the answer is kept whole, and every follower hears `done`."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from datetime import datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed
from chat.knowledge.documents import DOCUMENTS
from chat.models import Conversation, Document, Message
from chat.turns import registry
from chat.turns.recovery import all_settled
from tests.support import QUESTION
from tests.support.postgres import django_on, migrated, private_postgres
from tests.support.sockets import (
    ask,
    finish_turns,
    frames_until_done,
    is_final,
    json_until_done,
    open_socket,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(scope="module")
def postgres_server(django_db_blocker):
    """One server for the module's outages, which its tests stop, start or cut; each has a
    database of its own on it (PrivatePostgres.renew)."""
    if connections["default"].vendor != "postgresql":
        pytest.skip("a database outage is tried on PostgreSQL (DATABASE_URL)")
    with private_postgres() as server:
        with django_db_blocker.unblock():
            migrated(server)
        yield server


@pytest.fixture
def own_postgres(transactional_db, postgres_server):
    postgres_server.renew()
    with django_on(postgres_server):
        yield postgres_server


def seeded() -> Conversation:
    alice = get_user_model().objects.create_user("alice", password="alice-password")
    Document.objects.bulk_create(
        Document(title=title, language=language, body=body) for title, language, body in DOCUMENTS
    )
    return Conversation.objects.create(owner=alice)


async def asked_and_held(gate):
    """A fresh conversation's question over a program's socket, its turn held at the gate
    five chunks into its second request to the model; the conversation, the gate, the
    socket."""
    await sync_to_async(connections.close_all)()  # the database thread's, to this database
    conversation = await sync_to_async(seeded)()
    held = gate(after=5, request=2)
    socket = await open_socket(conversation, conversation.owner, as_json=True)
    await ask(socket, QUESTION)
    await held.reached.wait()
    return conversation, held, socket


async def test_a_turn_whose_end_meets_a_database_restart_is_kept_whole_and_followers_hear_done(
    settings, gate, caplog, own_postgres
):
    settings.GLASSBOX_HEARTBEAT_SECONDS = 60  # the end's retries, not a beat, are tried here
    _, held, socket = await asked_and_held(gate)
    await sync_to_async(own_postgres.stop)()
    caplog.set_level(logging.WARNING, logger="glassbox.turns")
    held.open()  # the turn streams on and reaches its end while the database is away
    events: list[dict] = []
    async with asyncio.timeout(20):
        while not any("could not write its end" in r.getMessage() for r in caplog.records):
            if not await socket.receive_nothing(timeout=0.05):
                events.append(json.loads(await socket.receive_from()))
    await sync_to_async(own_postgres.start)()
    loop = asyncio.get_running_loop()
    back = loop.time()
    events += await json_until_done(socket, limit=20)
    # `done` within 5 s of the database's return (its retries are at most a second apart).
    assert loop.time() - back < 5
    await finish_turns()
    await socket.disconnect()

    assert events[-1]["type"] == "done" and events[-1]["state"] == "complete"
    answer = await Message.objects.aget(role="assistant")
    streamed = "".join(e["content"] for e in events if e["type"] == "text")
    assert answer.state == "complete" and answer.content == streamed
    assert "Salary negotiation" in answer.content
    shown = sorted(e["seq"] for e in events if "seq" in e)
    stored = [
        seq
        async for seq in ActivityEvent.objects.filter(feed_id=answer.feed_id)
        .order_by("seq")
        .values_list("seq", flat=True)
    ]
    assert stored == list(range(1, len(stored) + 1)) and set(shown) <= set(stored)
    assert len(stored) >= 6
    await sync_to_async(connections.close_all)()


def silent_turn() -> tuple[Conversation, int]:
    """A streaming turn last heard of a minute ago, and its conversation."""
    from chat.turns.admission import admit

    conversation = seeded()
    turn = admit(conversation=conversation, text=QUESTION)
    answer_id, feed_id = turn.answer.pk, turn.answer.feed_id
    assert answer_id is not None and feed_id is not None
    long_ago = timezone.now() - timedelta(minutes=1)
    ActivityFeed.objects.filter(pk=feed_id).update(started_at=long_ago, heartbeat_at=long_ago)
    return conversation, answer_id


async def settled_here(conversation: Conversation) -> Message:
    """The conversation's answer once this process, whose runner gave up writing its end,
    has closed it and holds nothing of it."""
    async with asyncio.timeout(20):
        await all_settled()
    answer = await Message.objects.aget(conversation=conversation, role="assistant")
    assert not registry.holds(answer.pk)
    return answer


async def test_a_turn_that_cannot_write_its_end_is_recovered_with_what_it_held_not_empty(
    settings, gate, caplog, own_postgres
):
    settings.GLASSBOX_TURN_TIMEOUT = 3  # also how long the end is tried
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.05  # silent for 0.2 s: taken for dead
    conversation, held, socket = await asked_and_held(gate)
    await sync_to_async(own_postgres.stop)()
    caplog.set_level(logging.WARNING, logger="glassbox.turns")
    held.open()
    events: list[dict] = []
    async with asyncio.timeout(20):
        while not any(
            r.getMessage().startswith("turn ") and "could not write its end" in r.getMessage()
            for r in caplog.records
        ):
            if not await socket.receive_nothing(timeout=0.05):
                events.append(json.loads(await socket.receive_from()))
    await finish_turns()  # the runner gave up: the turn is released
    await socket.disconnect()  # its follower, which would recover it too
    await sync_to_async(own_postgres.start)()
    await sync_to_async(connections.close_all)()
    # Nobody asks: the process that gave up closes the turn itself once the database is
    # back, though the restart would spare the turn's silence (chat.turns.registry.given_up).
    answer = await settled_here(conversation)

    streamed = "".join(e["content"] for e in events if e["type"] == "text")
    # Everything it held, not only what the follower had read when the runner gave up.
    assert answer.state == "interrupted" and answer.content.startswith(streamed)
    assert answer.content.endswith("Ask me to go deeper into any of these.")
    stored = [
        (seq, message)
        async for seq, message in ActivityEvent.objects.filter(feed_id=answer.feed_id)
        .order_by("seq")
        .values_list("seq", "message")
    ]
    shown = {e["seq"] for e in events if "seq" in e}
    assert shown <= {seq for seq, _ in stored} and len(stored) >= 7
    assert stored[-1][1] == "Interrupted: the server stopped while working"
    await sync_to_async(connections.close_all)()


async def test_a_turn_closed_elsewhere_before_its_end_was_written_stays_closed(
    gate, caplog, alice, alice_conversation, knowledge_base
):
    """Another process took the turn for dead (it could not prove itself alive while the
    database was away) and closed it: the end that comes later does not overwrite that."""
    from chat.turns.recovery import _interrupt

    held = gate(after=5, request=2)
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, QUESTION)
    await held.reached.wait()
    answer = await Message.objects.select_related("feed").aget(role="assistant")
    closed_at = await sync_to_async(_interrupt)(answer, answer.answer_feed)
    assert closed_at is not None
    caplog.set_level(logging.WARNING, logger="glassbox.turns")
    held.open()
    await finish_turns()
    await socket.disconnect()

    await answer.arefresh_from_db()
    assert answer.state == "interrupted"
    last = await ActivityEvent.objects.filter(feed_id=answer.feed_id).order_by("seq").alast()
    assert last is not None
    assert (
        last.seq == closed_at and last.message == "Interrupted: the server stopped while working"
    )
    assert any("closed elsewhere" in r.getMessage() for r in caplog.records)


async def test_open_sockets_hear_done_with_the_whole_answer_after_a_12_second_outage(
    settings, gate, caplog, own_postgres
):
    """Each follower goes quiet during the outage and reads the turn (its `done` may have
    been dropped): the reads are tried again until the database is back, not the end of the
    follower, so both pages end (they stayed running until reloaded)."""
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.5  # quiet for 1 s: the followers read meanwhile
    await sync_to_async(connections.close_all)()
    conversation = await sync_to_async(seeded)()
    held = gate(after=5, request=2)
    program = await open_socket(conversation, conversation.owner, as_json=True)
    page = await open_socket(conversation, conversation.owner)
    await ask(program, QUESTION)
    await held.reached.wait()
    loop = asyncio.get_running_loop()
    await sync_to_async(own_postgres.stop)()
    down = loop.time()
    caplog.set_level(logging.WARNING, logger="glassbox.turns")
    held.open()  # the turn streams on and reaches its end while the database is away
    events: list[dict] = []
    frames: list[str] = []
    # 12 s away, as an operator's restart: drained meanwhile, and no `done` before it ends.
    while loop.time() - down < 12:
        if not await program.receive_nothing(timeout=0.05):
            events.append(json.loads(await program.receive_from()))
        if not await page.receive_nothing(timeout=0.05):
            frames.append(await page.receive_from())
    assert not any(e["type"] == "done" for e in events) and not any(map(is_final, frames))
    failed = [r.getMessage() for r in caplog.records]
    assert any("could not write its end" in m for m in failed)
    assert any("a follower of turn" in m and "could not read it" in m for m in failed)
    await sync_to_async(own_postgres.start)()
    back = loop.time()
    events += await json_until_done(program, limit=20)
    frames += await frames_until_done(page, limit=20)
    # Both within 5 s of the database's return (2 s at most between a follower's tries).
    assert loop.time() - back < 5
    await finish_turns()
    # Still open: a socket whose follower failed would close (1011) or hang running.
    assert await program.receive_nothing(timeout=0.2) and await page.receive_nothing(timeout=0.2)
    await program.disconnect()
    await page.disconnect()

    answer = await Message.objects.aget(role="assistant")
    assert answer.state == "complete"
    assert events[-1]["type"] == "done" and events[-1]["state"] == "complete"
    assert "".join(e["content"] for e in events if e["type"] == "text") == answer.content
    assert 'state-complete"' in frames[-1] or "state-complete " in frames[-1]
    assert "Ask me to go deeper into any of these." in frames[-1]
    await sync_to_async(connections.close_all)()


async def test_a_socket_that_cannot_follow_its_turn_closes_for_its_client_to_reconnect(
    settings, gate, caplog, own_postgres
):
    """The database away for longer than a turn may run: the follower gives up, and the socket
    closes as a server error, which clients answer by reconnecting, instead of showing a turn
    that runs on for ever."""
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.5  # quiet for 1 s: the follower reads
    conversation, held, socket = await asked_and_held(gate)
    # How long the turn's end and its follower's reads are tried (the turn's own limit was
    # read as it started).
    settings.GLASSBOX_TURN_TIMEOUT = 1
    await sync_to_async(own_postgres.stop)()
    caplog.set_level(logging.WARNING, logger="glassbox")
    held.open()
    frames = []
    async with asyncio.timeout(30):
        while (output := await socket.receive_output(timeout=30))["type"] != "websocket.close":
            frames.append(json.loads(output["text"]))
    assert output["code"] == 1011
    assert not any(frame["type"] == "done" for frame in frames)
    said = [r.getMessage() for r in caplog.records if r.name == "glassbox.sockets"]
    assert any("could not follow turn" in m and "reconnect" in m for m in said)
    await sync_to_async(own_postgres.start)()
    await finish_turns()
    # Its runner gave up: the process closes the turn with what it held once the database is
    # back, and lets go of it (the next test's answer, of the same id in a fresh database,
    # would be taken for it).
    answer = await settled_here(conversation)
    assert answer.state == "interrupted" and answer.content
    await sync_to_async(connections.close_all)()


async def test_a_turn_silent_across_a_database_restart_is_given_its_grace_from_the_restart(
    settings, own_postgres
):
    """No runner can beat while PostgreSQL is down: a turn last heard of before the restart is
    not taken for dead until it has been silent for the grace since the database came back
    (another worker's follower, reading first, closed it as interrupted while its runner was
    about to write its whole end)."""
    from chat.turns.recovery import dead_turns_recover

    settings.GLASSBOX_HEARTBEAT_SECONDS = 5  # a grace of 20 s
    await sync_to_async(connections.close_all)()
    conversation, answer_id = await sync_to_async(silent_turn)()
    await sync_to_async(own_postgres.stop)()
    await sync_to_async(own_postgres.start)()
    await sync_to_async(connections.close_all)()

    recover = sync_to_async(dead_turns_recover)
    assert await recover(conversation_id=conversation.pk) == 0
    assert (await Message.objects.aget(pk=answer_id)).state == "streaming"
    # Silent for the grace since the restart too (a grace of 4 ms, past): now it is dead.
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.001
    await asyncio.sleep(0.01)
    assert await recover(conversation_id=conversation.pk) == 1
    assert (await Message.objects.aget(pk=answer_id)).state == "interrupted"
    await sync_to_async(connections.close_all)()


async def test_a_turn_silent_across_a_cut_its_follower_met_is_given_its_grace_from_the_cut(
    settings, own_postgres
):
    """A failover or a network cut leaves the database's start as it was: a follower whose
    reads failed counts the turn's silence from its last failure, when the turn's runner could
    not beat either."""
    from chat.turns.follow import read_again
    from chat.turns.recovery import DatabaseStarted, dead_turns_recover
    from project import outages

    settings.GLASSBOX_HEARTBEAT_SECONDS = 2  # a grace of 8 s
    # How long the follower tries its read: a read that keeps failing once the cut is over
    # fails the test with its error, well within the test's own limit.
    settings.GLASSBOX_TURN_TIMEOUT = 30
    await sync_to_async(connections.close_all)()
    conversation, answer_id = await sync_to_async(silent_turn)()
    # The database started longer ago than the grace: its start alone saves no turn.
    rows = Message.objects.annotate(at=DatabaseStarted()).values_list("at", flat=True)
    started = await rows.afirst()
    assert isinstance(started, datetime)
    await asyncio.sleep(
        max(0.0, (started + timedelta(seconds=9) - timezone.now()).total_seconds())
    )

    before = outages.seen_down()
    # Cut and restored from a thread of its own: never queued behind the follower's read in
    # the database thread.
    await asyncio.to_thread(own_postgres.cut_off)
    recover = functools.partial(dead_turns_recover, conversation_id=conversation.pk)
    following = asyncio.create_task(read_again(answer_id, recover))
    # Until the follower's read failed (a read the cut did not fail ends the wait too).
    async with asyncio.timeout(30):
        while outages.seen_down() == before and not following.done():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await asyncio.to_thread(own_postgres.cut_off, cut=False)
    assert await following == 0
    assert (await Message.objects.aget(pk=answer_id)).state == "streaming"
    # Silent for the grace since the cut too (a grace of 4 ms, past): now it is dead.
    settings.GLASSBOX_HEARTBEAT_SECONDS = 0.001
    await asyncio.sleep(0.01)
    assert await sync_to_async(recover)() == 1
    assert (await Message.objects.aget(pk=answer_id)).state == "interrupted"
    await sync_to_async(connections.close_all)()
