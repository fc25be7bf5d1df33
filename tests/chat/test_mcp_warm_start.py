"""A server process opens its MCP servers when it starts, with the tools their last sessions
listed: a question that needs no MCP tool waits for none, and one that calls a remembered
tool waits only for that server (a real server built with the `mcp` SDK, slow to start for as
long as the test holds its gate)."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from chat.servers import heartbeat
from chat.servers.heartbeat import beat, listing_key
from chat.servers.models import McpServerSighting
from chat.turns.deps import configured_tools
from tests.support.mcp import stdio
from tests.support.sockets import ask, finish_turns, json_turn, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def remembered_by_an_earlier_process(settings, sessions, tmp_path):
    """The bench server, declared, whose tools an earlier process connected to and wrote
    down; and the file whose presence lets it start (there now: remove it to slow it)."""
    settings.GLASSBOX_MCP_CONNECT_TIMEOUT = 30
    gate = tmp_path / "may-start"
    gate.touch()
    bench = stdio("bench", TESTBENCH_START_GATE=str(gate))
    settings.GLASSBOX_MCP_SERVERS = [bench]
    await sessions.connect([bench])
    await beat("earlier:1", timezone.now(), [bench], first=True)
    await sessions.close()
    return bench, gate


async def test_a_starting_process_offers_remembered_tools_and_only_their_call_waits(
    settings, sessions, alice, alice_conversation, tmp_path
):
    bench, gate = await remembered_by_an_earlier_process(settings, sessions, tmp_path)
    earlier = await McpServerSighting.objects.aget(worker="earlier:1")
    assert earlier.state == "connected" and earlier.listed_under == listing_key(bench)

    # This process starts while the server is slow to start.
    gate.unlink()
    await beat("this:2", timezone.now(), [bench], first=True)
    connection = sessions.connections["bench"]
    assert connection.connecting and "count" in {tool.name for tool in connection.tools}

    events = await json_turn(alice_conversation, alice, "Tell me a joke")
    assert events[-1]["state"] == "complete"
    assert connection.connecting, "the question that needs no MCP tool waited for none"

    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, 'bench__count {"steps": 2}')
    heard: list[dict] = []
    while not any(event["type"] == "tool_call" for event in heard):
        heard.append(json.loads(await socket.receive_from(timeout=20)))
    assert connection.connecting, "the remembered tool was offered and called before connecting"
    gate.touch()
    heard += await json_until_done(socket, 30)
    await finish_turns()
    await socket.disconnect()

    (result,) = [event for event in heard if event["type"] == "tool_result"]
    assert result["ok"] is True and result["summary"] == "counted to 2"
    assert heard[-1]["state"] == "complete"


async def test_remembered_tools_of_another_declaration_are_not_offered(settings, sessions):
    old, new = stdio("bench"), stdio("bench", TESTBENCH_NO_LISTEN="1")
    await sessions.connect([old])
    await beat("earlier:1", timezone.now(), [old], first=True)
    await sessions.close()

    from chat.servers.heartbeat import remembered_tools

    assert set(await remembered_tools([old])) == {"bench"}
    assert await remembered_tools([new]) == {}, "its declaration changed: its tools may too"


async def test_a_turn_that_comes_with_the_start_has_the_remembered_tools_at_once(
    settings, sessions, tmp_path, monkeypatch
):
    _bench, gate = await remembered_by_an_earlier_process(settings, sessions, tmp_path)
    gate.unlink()

    # The process starts its watch, and a turn asks for its tools in the same instant.
    monkeypatch.setattr(heartbeat, "_looked", None)
    watching = heartbeat.start_watching()
    try:
        tools = await configured_tools()
        assert tools.get("bench__count") is not None
        assert sessions.connections["bench"].connecting, "it waited for the look, not the server"
    finally:
        watching.cancel()
        gate.touch()
