from __future__ import annotations

import json
from typing import Any

import pytest

from chat.agent.memory import trim
from chat.turns.deps import Dependencies
from tests.support.fakes import ScriptedTransport, scripted_client, text_response
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def ask(conversation, question: str, transport=None) -> None:
    provider = Dependencies(client_factory=lambda: scripted_client(transport))
    run_turn(conversation, question, provider if transport else None)


def test_a_follow_up_reaches_the_model_with_the_earlier_turn_and_its_tools(
    alice_conversation, knowledge_base
):
    ask(alice_conversation, "How do I negotiate my salary?")  # the demo model searches
    transport = ScriptedTransport([text_response("Yes, ask for 10% more.")])
    ask(alice_conversation, "Should I ask for more?", transport)

    messages = transport.requests[0]["messages"]
    assert messages[0]["role"] == "system"
    roles = [m["role"] for m in messages[1:]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[1]["content"] == "How do I negotiate my salary?"
    call = messages[2]["tool_calls"][0]
    assert call["function"]["name"] == "search_documents"
    assert json.loads(call["function"]["arguments"])["query"] == "negotiate salary"
    assert messages[3]["tool_call_id"] == call["id"]
    assert "Salary negotiation: preparing your number" in messages[3]["content"]
    assert messages[4]["content"].startswith("Here is what the knowledge base says:")
    assert messages[5] == {"role": "user", "content": "Should I ask for more?"}


def test_the_system_prompt_names_the_assistant_and_the_feedback_rules(alice_conversation):
    transport = ScriptedTransport([text_response("Hello.")])
    ask(alice_conversation, "Hi", transport)
    system = transport.requests[0]["messages"][0]["content"]
    assert "Glassbox" in system
    assert "feedback_to_user" in system and "100 characters" in system
    assert "language" in system


def test_old_turns_are_trimmed_from_the_oldest_to_the_budget(settings, alice_conversation):
    for number in range(5):
        ask(alice_conversation, f"question {number} " + "x" * 200)
    settings.GLASSBOX_HISTORY_CHARS = 1200
    transport = ScriptedTransport([text_response("ok")])
    ask(alice_conversation, "latest question", transport)
    sent = [m["content"] for m in transport.requests[0]["messages"][1:] if m["role"] == "user"]
    assert sent[-1] == "latest question"
    assert sent[0].startswith("question 3") or sent[0].startswith("question 4")
    assert not any(s.startswith("question 0") for s in sent)


def test_trimming_keeps_the_question_and_never_splits_a_tool_call_from_its_result():
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "old " * 100},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r" * 100},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "new question " * 100},
    ]
    assert trim(messages, budget=10) == [messages[-1]]
    assert trim(messages, budget=10_000) == messages
