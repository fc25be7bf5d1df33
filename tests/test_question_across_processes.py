"""An MCP server's question asked by a turn on one Daphne process and answered on a socket of
another (one SQLite database, a Redis of the test's own between them): the answer reaches
the waiting call through the channel layer, not at its look at the database (once a second by
default, two minutes apart here)."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from tests.support.live_questions import drained, live_socket, wait_for_answer
from tests.support.mcp import ROOT
from tests.support.outages import redis_server
from tests.support.servers import login, serve, start_daphne

# Its site and its Redis are its own: the run's database and layer play no part.
pytestmark = [pytest.mark.server, pytest.mark.own_site]

BENCH = {
    "name": "bench",
    "command": sys.executable,
    "args": ["-m", "tests.support.mcp_server"],
    "env": {"PYTHONPATH": str(ROOT)},
}
# The waiting call's look at its row, made far slower than any hand-off through the layer:
# an answer that arrives well within it came through the layer.
POLL_SECONDS = 120
WITHIN_SECONDS = 30
ROUNDS = 3


async def _waits(asking_server, answering_server) -> list[float]:
    conversation, cookies = await asyncio.to_thread(login, asking_server.url)
    waits = []
    async with (
        live_socket(asking_server, conversation, cookies) as asking,
        live_socket(answering_server, conversation, cookies) as other,
        drained(other) as answering,
    ):
        for _ in range(ROUNDS):
            async with asyncio.timeout(WITHIN_SECONDS):  # an answer left to the poll fails here
                waits.append(await wait_for_answer(asking, answering))
    return waits


def test_an_answer_given_on_another_process_reaches_the_server_through_the_layer(tmp_path):
    with (
        redis_server() as redis,
        serve(
            tmp_path,
            REDIS_URL=redis.url,
            GLASSBOX_DEMO_DELAY="0",
            GLASSBOX_MCP_SERVERS=json.dumps([BENCH]),
            GLASSBOX_QUESTION_POLL_SECONDS=str(POLL_SECONDS),
            GLASSBOX_ELICITATION_TIMEOUT=str(POLL_SECONDS * 2),
        ) as first,
    ):
        second = start_daphne(first.env)
        try:
            waits = asyncio.run(_waits(first, second))
        finally:
            second.stop()

    assert max(waits) < WITHIN_SECONDS, waits
