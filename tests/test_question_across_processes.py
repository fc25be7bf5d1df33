"""An MCP server's question asked by a turn on one Daphne process and answered on a socket of
another (one SQLite database, a Redis of the test's own between them): the answer reaches
the waiting call through the channel layer, not at its once-a-second look at the database."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from tests.support.live_questions import drained, live_socket, wait_for_answer
from tests.support.mcp import ROOT
from tests.support.outages import redis_server
from tests.support.servers import login, serve, start_daphne

pytestmark = pytest.mark.server

BENCH = {
    "name": "bench",
    "command": sys.executable,
    "args": ["-m", "tests.support.mcp_server"],
    "env": {"PYTHONPATH": str(ROOT)},
}
# A poll once a second answers within this bound one time in five, so four rounds of five
# within it happen to a poll 0.7% of the time; the layer's hand-off takes tens of
# milliseconds, and one round in five may be slowed by a busy machine (0.25 s was seen on
# CI running both suites side by side). A first round, not counted, warms every part up.
ROUNDS = 5
BOUND = 0.2
WITHIN = 4


async def _waits(asking_server, answering_server) -> list[float]:
    conversation, cookies = await asyncio.to_thread(login, asking_server.url)
    waits = []
    async with (
        live_socket(asking_server, conversation, cookies) as asking,
        live_socket(answering_server, conversation, cookies) as other,
        drained(other) as answering,
    ):
        await wait_for_answer(asking, answering)  # not counted: the first use of each part
        for _ in range(ROUNDS):
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
        ) as first,
    ):
        second = start_daphne(first.env)
        try:
            waits = asyncio.run(_waits(first, second))
        finally:
            second.stop()

    assert sum(wait < BOUND for wait in waits) >= WITHIN, waits
