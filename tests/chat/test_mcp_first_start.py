"""The very first start of a deployment: nobody has listed an MCP server's tools yet and the
process's first session with it is still opening. A question that needs none of its tools
waits for nothing; one that needs it opens it through the server's connect tool, and the
same turn goes on with its tools (a real server built with the `mcp` SDK, slow to start for
as long as the test holds its gate)."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from chat.servers.heartbeat import beat
from tests.support.mcp import stdio
from tests.support.sockets import ask, finish_turns, json_turn, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def called(events: list[dict]) -> list[str]:
    return [e["tool"] for e in events if e["type"] == "tool_call"]


async def test_a_first_start_makes_no_question_wait_for_a_server_it_does_not_need(
    settings, sessions, alice, alice_conversation, tmp_path
):
    settings.GLASSBOX_MCP_CONNECT_TIMEOUT = 30
    gate = tmp_path / "may-start"  # absent: the server is still starting
    bench = stdio("bench", TESTBENCH_START_GATE=str(gate))
    settings.GLASSBOX_MCP_SERVERS = [bench]
    # The process starts: its first look opens the server; no process ever listed it.
    await beat("this:1", timezone.now(), [bench], first=True)
    connection = sessions.connections["bench"]
    assert connection.connecting and not connection.remembered

    joke = await json_turn(alice_conversation, alice, "Tell me a joke")
    assert joke[-1]["state"] == "complete" and not called(joke)
    assert connection.connecting, "the question that needs no MCP tool waited for none"

    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, 'bench__count {"steps": 2}')
    heard: list[dict] = []
    while not called(heard):
        heard.append(json.loads(await socket.receive_from(timeout=20)))
    assert called(heard) == ["connect_bench"] and connection.connecting
    gate.touch()
    heard += await json_until_done(socket, 30)
    await finish_turns()
    await socket.disconnect()

    assert called(heard) == ["connect_bench", "bench__count"]
    opened, counted = [e for e in heard if e["type"] == "tool_result"]
    assert opened["ok"] and counted["ok"] and counted["summary"] == "counted to 2"
    assert heard[-1]["state"] == "complete"
