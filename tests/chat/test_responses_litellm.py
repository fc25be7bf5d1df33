"""A turn over the Responses API against a real server that speaks it: LiteLLM's proxy, which
serves /v1/responses over the tests' scripted Chat Completions model. What the model streams
through it (text, a call with its feedback, its thinking, usage) ends in the feed as it does
over Chat Completions."""

from __future__ import annotations

import json

import pytest

from activity.models import ModelCall
from chat.models import Message
from tests.support.fakes import text_response, tool_call_response
from tests.support.litellm import litellm_or_skip, litellm_proxy
from tests.support.provider_server import scripted_provider
from tests.support.turns import run_turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.foreign_wire]

ARGUMENTS = json.dumps({"feedback_to_user": "Adding up the two offers", "expression": "52+48"})
THOUGHT = "Both offers are known: 52 and 48."
USAGE = {"usage": {"prompt_tokens": 321, "completion_tokens": 45,
                   "completion_tokens_details": {"reasoning_tokens": 12}}}  # fmt: skip


def test_a_turn_through_litellms_responses_api(settings, alice_conversation, tmp_path):
    litellm_or_skip()
    script = [
        [*tool_call_response(("call_1", "calculator", ARGUMENTS), size=5), USAGE],
        # A vLLM or DeepSeek model's thinking, which LiteLLM streams as Responses reasoning.
        [{"reasoning_content": THOUGHT}, *text_response("Together they make 100."), USAGE],
    ]
    with (
        scripted_provider(script) as model,
        litellm_proxy(tmp_path, model.url, "scripted") as (url, key),
    ):
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = url, key
        settings.GLASSBOX_MODEL_API = "responses"
        settings.GLASSBOX_MODEL = "scripted"
        settings.GLASSBOX_PROVIDER_RETRIES = 0
        settings.GLASSBOX_TOOLS = ["chat.agent.builtin_tools.CALCULATOR"]

        answer = run_turn(alice_conversation, "What do the two offers add up to?")

    assert (answer.state, answer.content) == (Message.State.COMPLETE, "Together they make 100.")
    shown = [(e.icon, e.message, e.state) for e in answer.answer_feed.events.order_by("seq")
             if e.kind == "status"]  # fmt: skip
    assert ("🧮", "Adding up the two offers", "in_progress") in shown
    assert ("🧮", "Calculated 52+48 = 100", "done") in shown
    assert ("💭", "Thinking…", "in_progress") in shown
    calls = ModelCall.objects.filter(feed=answer.feed).order_by("round")
    assert [
        (c.reasoning, c.prompt_tokens, c.completion_tokens, c.reasoning_tokens) for c in calls
    ] == [("", 321, 45, 12), (THOUGHT, 321, 45, 12)]
    # LiteLLM asked the scripted model in Chat Completions: the call went back as a tool
    # message with its result.
    first, second = model.requests
    assert first["messages"][-1] == {
        "role": "user", "content": "What do the two offers add up to?"
    }  # fmt: skip
    assert first["messages"][0]["role"] == "system"
    assert [m["role"] for m in second["messages"][-2:]] == ["assistant", "tool"]
    assert second["messages"][-1]["tool_call_id"] == "call_1"
    assert json.loads(second["messages"][-1]["content"])["result"] == 100
