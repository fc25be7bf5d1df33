"""PostgreSQL stopped for 12 s across a turn's end, with `project.serve --workers 2`: the
turn runs in one worker, a page follows it from the other through Redis, and both sockets
hear `done` with the whole answer once the database is back; neither closes or stays running
until reloaded."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess

import psycopg
import pytest
import websockets
from websockets.typing import Subprotocol

from tests.support import QUESTION
from tests.support.fakes import text_response
from tests.support.held_provider import held_provider
from tests.support.postgres import private_postgres
from tests.support.servers import login, serve, services
from tests.support.sockets import is_final

pytestmark = [
    pytest.mark.server,
    # .ci/run installs iproute2 where `ss` is missing: there the test must run.
    pytest.mark.skipif(
        shutil.which("ss") is None and not os.environ.get("CI"), reason="needs ss (iproute2)"
    ),
]

ANSWER = "Research the range, name a number first, and ask for time to think it over. " * 4
OUTAGE_SECONDS = 12


def worker_of(client: websockets.ClientConnection, port: int) -> int:
    """The pid of the worker holding this connection's other end (iproute2's `ss`)."""
    mine = client.local_address[1]
    listing = subprocess.run(
        ["ss", "-Htnp", "state", "established", f"( sport = :{port} and dport = :{mine} )"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    found = re.search(r"pid=(\d+)", listing)
    assert found, f"no worker holds the connection from port {mine}: {listing!r}"
    return int(found.group(1))


async def one_on_each_worker(url: str, conversation: str, cookies: str, port: int):
    """A program's socket (JSON) on one worker and a page's on the other: sockets are opened
    until the kernel's spread of the shared port has put one on each, the others closed."""
    where = f"{url.replace('http', 'ws')}/ws/c/{conversation}/"
    headers = {"Cookie": cookies, "Origin": url}
    program = await websockets.connect(
        where, additional_headers=headers, subprotocols=[Subprotocol("glassbox.json")]
    )
    first = worker_of(program, port)
    for _ in range(40):
        page = await websockets.connect(where, additional_headers=headers)
        if worker_of(page, port) != first:
            return program, page
        await page.close()
    raise AssertionError("40 sockets in a row went to the same worker")


async def drain(socket, seconds: float) -> list[str]:
    """What the socket says within `seconds`."""
    said: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (left := deadline - loop.time()) > 0:
        try:
            said.append(await asyncio.wait_for(socket.recv(), left))
        except TimeoutError:
            break
    return said


async def until_done(socket, seconds: float, done) -> list[str]:
    said: list[str] = []
    async with asyncio.timeout(seconds):
        while not said or not done(said[-1]):
            said.append(await socket.recv())
    return said


def test_both_workers_sockets_hear_done_with_the_whole_answer_after_a_12_second_outage(tmp_path):
    """The beat is the default (2 s): a worker's first turn may hold its loop a while as it
    loads the model's client, which a shorter beat would take for a dead turn."""
    _, redis = services()
    with (
        private_postgres() as database,
        held_provider() as provider,
        serve(
            tmp_path,
            ("--workers", "2"),
            DATABASE_URL=database.url,
            REDIS_URL=redis,
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=provider.url,
            GLASSBOX_MODEL="scripted",
        ) as server,
    ):
        held = provider.respond(text_response(ANSWER), hold_after=5)
        port = int(server.url.rsplit(":", 1)[1])
        conversation, cookies = login(server.url)

        async def scenario() -> tuple[list[dict], list[str], float]:
            program, page = await one_on_each_worker(server.url, conversation, cookies, port)
            await program.send(json.dumps({"message": QUESTION}))
            assert await asyncio.to_thread(held.reached.wait, 30)
            await asyncio.to_thread(database.stop)
            try:
                held.open()  # the turn streams on and reaches its end while the database is away
                loop = asyncio.get_running_loop()
                down = loop.time()
                events, frames = await asyncio.gather(
                    drain(program, OUTAGE_SECONDS), drain(page, OUTAGE_SECONDS)
                )
                events_read = [json.loads(event) for event in events]
                assert not any(e["type"] == "done" for e in events_read), events_read[-3:]
                assert not any(map(is_final, frames))
                assert loop.time() - down >= OUTAGE_SECONDS - 0.5
            finally:  # also when it failed: the workers stop once their turn can end
                await asyncio.to_thread(database.start)
            back = loop.time()
            more, final = await asyncio.gather(
                until_done(program, 20, lambda event: json.loads(event)["type"] == "done"),
                until_done(page, 20, is_final),
            )
            took = loop.time() - back
            # Still open: a socket whose follower failed would have closed (1011).
            assert not await drain(program, 0.3) and not await drain(page, 0.3)
            await program.close()
            await page.close()
            return [*events_read, *map(json.loads, more)], [*frames, *final], took

        events, frames, took = asyncio.run(scenario())
        said = os.pread(server.log.fileno(), 10_000_000, 0).decode(errors="replace")
        # Both within 5 s of the database's return (2 s at most between a follower's tries).
        assert took < 5
        assert events[-1]["type"] == "done" and events[-1]["state"] == "complete"
        assert "".join(e["content"] for e in events if e["type"] == "text") == ANSWER
        assert 'state-complete"' in frames[-1] or "state-complete " in frames[-1]
        assert ANSWER.split(".")[0] in frames[-1]
        # The turn's end was tried again, and each follower's read of it (the two sockets')
        # failed at least once: quiet for two beats (4 s), they read while it was away.
        answer = events[0]["message_id"]
        assert re.search(r"turn of feed \d+ could not write its end", said)
        first_misses = f"a follower of turn {answer} could not read it; trying again in 0.20 s"
        # The log has each warning twice, once with its time and level: those are counted.
        assert said.count(f"WARNING  {first_misses}") >= 2
        with psycopg.connect(database.url) as connection:
            stored = connection.execute(
                "SELECT state, content FROM chat_message WHERE role = 'assistant'"
            ).fetchall()
        assert stored == [("complete", ANSWER)]
