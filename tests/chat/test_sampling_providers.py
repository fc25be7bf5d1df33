"""An approved sampling request goes to the provider the deployment configured, as that API
asks for it: Chat Completions (a scripted OpenAI-compatible server) with
`max_completion_tokens`, the Responses API (a scripted Responses server) with
`max_output_tokens` and the system prompt as instructions; never with tools. What the provider
counts is the call's usage, and a reply that breaks off is a failed call, recorded, said in
the feed and refused to the server."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from asgiref.sync import sync_to_async

from activity.models import ModelCall
from chat.agent.sampling import FIRST_ROUND
from tests.support.audit import verify
from tests.support.fakes import text_response, tool_call_response
from tests.support.mcp import stdio
from tests.support.provider_server import scripted_provider
from tests.support.questions import answer, json_until_question
from tests.support.responses_server import MODEL, Output, Reply, responses_server, usage
from tests.support.sockets import finish_turns, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

POEM = ("call_p", "bench__write_poem", json.dumps({"topic": "rain"}))
ASKED = [
    {"role": "system", "content": 'You are a poet. <img src=x onerror="window.pwned=1">'},
    {"role": "user", "content": "[image]"},
    {"role": "user", "content": "Write a haiku about rain"},
]


@pytest.fixture
def configured(settings, sessions):
    settings.OPENAI_API_KEY = "sk-test"
    settings.GLASSBOX_MODEL = "scripted"
    settings.GLASSBOX_PROVIDER_RETRIES = 0
    settings.GLASSBOX_MCP_SERVERS = [replace(stdio("bench"), sampling=True)]
    return settings


async def _approved_turn(conversation, user) -> list[dict]:
    socket = await open_socket(conversation, user, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": "Write me a poem"}))
    events, card = await json_until_question(socket)
    await answer(socket, card)
    events += await json_until_done(socket, 30)
    await finish_turns()
    await socket.disconnect()
    return events


def said(events: list[dict]) -> str:
    results = [e for e in events if e["type"] == "tool_result"]
    return json.dumps(results, ensure_ascii=False)


async def test_over_chat_completions_the_request_is_sent_as_the_server_asked_without_tools(
    configured, alice, alice_conversation
):
    poem = [
        *text_response("Rain on the roof"),
        {"usage": {"prompt_tokens": 31, "completion_tokens": 7}},
    ]
    script = [tool_call_response(POEM), poem, text_response("Here is your poem.")]
    with scripted_provider(script) as provider:
        configured.OPENAI_BASE_URL = provider.url
        events = await _approved_turn(alice_conversation, alice)

    sent = provider.requests[1]
    assert sent["messages"] == ASKED
    assert sent["max_completion_tokens"] == 60 and sent["model"] == "scripted"
    assert "tools" not in sent
    assert "poem by glassbox-demo (endTurn): Rain on the roof" in said(events)
    call = await ModelCall.objects.aget(round=FIRST_ROUND)
    assert (call.prompt_tokens, call.completion_tokens) == (31, 7)
    assert (await sync_to_async(verify)())[0] == 0


async def test_over_the_responses_api_the_system_prompt_is_the_instructions(
    configured, alice, alice_conversation
):
    configured.GLASSBOX_MODEL_API = "responses"
    replies = [
        Reply(Output().calls(POEM).events(usage(100, 20))),
        Reply(Output().text("Rain on the roof").events(usage(40, 9, reasoning=3))),
        Reply(Output().text("Here is your poem.").events(usage(150, 10))),
    ]
    with responses_server(replies) as server:
        configured.OPENAI_BASE_URL = server.url
        events = await _approved_turn(alice_conversation, alice)

    sent = server.requests[1]
    assert sent["instructions"] == ASKED[0]["content"]
    assert sent["max_output_tokens"] == 60 and "tools" not in sent
    assert [item["content"] for item in sent["input"]] == ["[image]", "Write a haiku about rain"]
    assert f"poem by {MODEL} (endTurn): Rain on the roof" in said(events)
    call = await ModelCall.objects.aget(round=FIRST_ROUND)
    assert (call.prompt_tokens, call.completion_tokens, call.reasoning_tokens) == (40, 9, 3)


async def test_a_reply_that_breaks_off_is_a_failed_call_refused_to_the_server(
    configured, alice, alice_conversation
):
    # The sampling request's reply ends before it says it is finished.
    script = [tool_call_response(POEM), text_response("Rain on")[:-1], text_response("Sorry.")]
    with scripted_provider(script) as provider:
        configured.OPENAI_BASE_URL = provider.url
        events = await _approved_turn(alice_conversation, alice)

    lines = [e["message"] for e in events if e["type"] == "status"]
    assert "The model could not answer the request of bench" in lines
    assert "the model could not answer" in said(events)
    assert "poem by" not in said(events)
    call = await ModelCall.objects.aget(round=FIRST_ROUND)
    assert call.error_type == "ProviderError"
    assert events[-1]["state"] == "complete"
    assert (await sync_to_async(verify)())[0] == 0
