"""server-everything's sampling tool (`trigger-sampling-request`, a server built with the
TypeScript SDK that asks during the call), driven by real turns over a socket: an approved
request's answer reaches the server, a denied one is refused, and a server not declared with
sampling is not offered the tool (it registers it only for a client that declares the
capability)."""

from __future__ import annotations

import json

import pytest

from activity.models import ModelCall
from chat.agent.sampling import FIRST_ROUND
from chat.models import Elicitation
from tests.support.everything import everything
from tests.support.questions import answer, json_until_question
from tests.support.sockets import finish_turns, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ASK = 'everything__trigger-sampling-request {"prompt": "a haiku about rain", "maxTokens": 50}'


def said(events: list[dict]) -> str:
    """The calls' results and the answer, where the demo model repeats a result whole."""
    results = [e for e in events if e["type"] == "tool_result"]
    answer_text = "".join(e["content"] for e in events if e["type"] == "text")
    return json.dumps(results, ensure_ascii=False) + answer_text


async def _asked(conversation, user):
    socket = await open_socket(conversation, user, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": ASK}))
    _events, card = await json_until_question(socket, 60)
    return socket, card


async def _ended(socket) -> list[dict]:
    events = await json_until_done(socket, 60)
    await finish_turns()
    await socket.disconnect()
    return events


async def test_an_approved_request_is_answered_by_the_model(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [everything(sampling=True)]
    socket, card = await _asked(alice_conversation, alice)

    asked = card["sampling"]
    assert asked["system_prompt"] == "You are a helpful test server."
    assert asked["max_tokens"] == 50 and asked["temperature"] == 0.7
    assert asked["messages"][0]["text"].endswith("context: a haiku about rain")
    await answer(socket, card)
    events = await _ended(socket)

    assert "LLM sampling result" in said(events)
    # The server's own words around what the model wrote, as the server received it.
    assert '"model": "glassbox-demo"' in said(events).replace('\\"', '"')
    assert '"stopReason": "endTurn"' in said(events).replace('\\"', '"')
    assert "context: a haiku about rain" in said(events)
    assert await ModelCall.objects.filter(round=FIRST_ROUND).aexists()


async def test_a_denied_request_is_refused(settings, sessions, alice, alice_conversation):
    settings.GLASSBOX_MCP_SERVERS = [everything(sampling=True)]
    socket, card = await _asked(alice_conversation, alice)

    await answer(socket, card, "decline")
    events = await _ended(socket)

    assert "The user denied the request" in said(events)
    assert "LLM sampling result" not in said(events)
    assert not await ModelCall.objects.filter(round=FIRST_ROUND).aexists()
    assert (await Elicitation.objects.aget()).state == "decline"


async def test_without_sampling_declared_the_server_offers_no_sampling_tool(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [everything(sampling=False)]
    connections = await sessions.connect(settings.GLASSBOX_MCP_SERVERS)

    names = {tool.name for tool in connections[0].tools}
    assert "echo" in names and "trigger-sampling-request" not in names
