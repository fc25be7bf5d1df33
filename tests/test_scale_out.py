"""Two Daphne processes sharing PostgreSQL and Redis: a turn started on one is watched live
on the other, and when the first is killed mid-turn the other's client sees it interrupted.
Needs DATABASE_URL (PostgreSQL) and REDIS_URL, which .ci/run provides; skipped without them
unless REQUIRE_SERVICES=1, which makes a missing server fail the run."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from typing import Any

import pytest
import websockets
from websockets.typing import Subprotocol

from tests.support.servers import demo_token, login, start_daphne, two_servers

pytestmark = pytest.mark.server

# Past twice redis-py's default read timeout, which once dropped idle pages.
IDLE_SECONDS = 12


@pytest.fixture(scope="module")
def shared_servers(tmp_path_factory):
    # A beat of a second: a process held up to 4 s by a loaded machine is not taken for dead
    # (one of 0.2 s was, its turn closed as interrupted while it ran), and the dead process's
    # turn is still seen interrupted within seconds.
    settings = {"GLASSBOX_DEMO_DELAY": "0.02", "GLASSBOX_HEARTBEAT_SECONDS": "1"}
    with two_servers(tmp_path_factory.mktemp("scale"), **settings) as servers:
        for server in servers:
            warmed(server)
        yield servers


def warmed(server) -> None:
    """The process has served a turn. Its first loads the model's SDK, which on a loaded
    machine can hold the process past the heartbeat's grace here (4 beats of 1 s), and
    another process would rightly take that turn for dead: these tests are about turns of a
    process at work, not about its first."""
    conversation, _cookies = login(server.url)
    seen: list[dict[str, Any]] = []
    ask_over_sse(server, demo_token(server.env), conversation, "Hello", seen, threading.Event())
    assert seen and seen[-1]["type"] == "done", seen[-3:]


def ask_over_sse(server, token, conversation, question, seen, writing):
    request = urllib.request.Request(
        f"{server.url}/api/conversations/{conversation}/messages/",
        data=json.dumps({"content": question}).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json",
                 "Accept": "text/event-stream"},
    )  # fmt: skip
    try:
        for raw in urllib.request.urlopen(request, timeout=60):
            if raw.startswith(b"data: "):
                seen.append(json.loads(raw[6:]))
                if len([e for e in seen if e["type"] == "text"]) >= 5:
                    writing.set()
    except OSError:
        pass  # the server was killed under it


async def watch(server, conversation, cookies, until):
    events: list[dict[str, Any]] = []
    async with websockets.connect(
        server.url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": server.url},
        subprotocols=[Subprotocol("glassbox.json")],
    ) as socket:
        await socket.send(json.dumps({"noop": True}))  # answered with an error: the socket is live
        json.loads(await asyncio.wait_for(socket.recv(), 10))
        until.set()
        while not events or events[-1]["type"] != "done":
            events.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
    return events


def watch_a_turn(first, second, *, kill_first: bool = False) -> tuple[list, list]:
    """A turn asked through `first` over SSE and watched from a socket on `second`; with
    kill_first, `first` is SIGKILLed once the answer is being written. Returns what the
    socket saw and what the asker saw."""
    token = demo_token(first.env)
    conversation, cookies = login(second.url)
    ready, writing = threading.Event(), threading.Event()
    seen: list[dict[str, Any]] = []

    async def scenario():
        watcher = asyncio.create_task(watch(second, conversation, cookies, ready))
        # The question is asked only once the other process's socket is live.
        assert await asyncio.to_thread(ready.wait, 10), "the watching socket never opened"
        asker = threading.Thread(
            target=ask_over_sse,
            args=(first, token, conversation, "How do I negotiate my salary?", seen, writing),
            daemon=True,
        )
        asker.start()
        if kill_first:
            assert await asyncio.to_thread(writing.wait, 20), seen[-3:]
            first.process.kill()  # SIGKILL mid-turn: no cleanup of any kind runs
        watched = await watcher
        await asyncio.to_thread(asker.join, 30)
        assert not asker.is_alive(), "the asker's stream never ended"
        return watched

    return asyncio.run(scenario()), seen


def test_a_turn_on_one_process_is_watched_live_on_the_other(shared_servers):
    watched, seen = watch_a_turn(*shared_servers)
    assert watched[0]["type"] == "turn"
    recorded = [e for e in seen if "seq" in e]
    assert [e for e in watched if "seq" in e] == recorded  # every line, in order
    assert [e["seq"] for e in recorded] == list(range(1, len(recorded) + 1))
    text = "".join(e["content"] for e in watched if e["type"] == "text")
    assert text == "".join(e["content"] for e in seen if e["type"] == "text")
    assert watched[-1]["state"] == "complete"


def test_when_the_running_process_dies_the_other_sees_the_turn_interrupted(shared_servers):
    first, second = shared_servers
    # A third process of its own to kill, so the shared ones serve the other tests in any order.
    doomed = start_daphne(first.env)
    try:
        warmed(doomed)
        watched, _ = watch_a_turn(doomed, second, kill_first=True)
    finally:
        doomed.stop()
    assert watched[-1]["type"] == "done" and watched[-1]["state"] == "interrupted"
    lost = [e for e in watched if e["type"] == "status"][-1]
    assert (lost["icon"], lost["message"]) == (
        "⚠️",
        "Interrupted: the server stopped while working",
    )


def test_an_idle_socket_stays_open_and_answers_later(shared_servers):
    """Redis' client gives up reading after its socket timeout (5 s by default since redis-py
    8) while the layer blocks up to 5 s for a message: an idle page must not be dropped."""
    _, second = shared_servers
    conversation, cookies = login(second.url)

    async def scenario():
        async with websockets.connect(
            second.url.replace("http", "ws") + f"/ws/c/{conversation}/",
            additional_headers={"Cookie": cookies, "Origin": second.url},
            subprotocols=[Subprotocol("glassbox.json")],
        ) as socket:
            # A person reading, longer than Redis' client waits for a read (5 s): nothing
            # arrives and the socket stays open (a dropped one ends recv() at once).
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(socket.recv(), IDLE_SECONDS)
            await socket.send(json.dumps({"message": "How do I negotiate my salary?"}))
            events = [json.loads(await asyncio.wait_for(socket.recv(), 30))]
            while events[-1]["type"] != "done":
                events.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
            return events

    events = asyncio.run(scenario())
    assert events[-1]["state"] == "complete"
