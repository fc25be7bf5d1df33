"""The turn pipeline's front door: `chat.turns` names its verbs and hides none of its modules,
and what a turn runs with reaches it however it was begun."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import chat.turns
from chat.turns.deps import Dependencies
from tests.support.fakes import ScriptedTransport, scripted_client, text_response
from tests.support.sockets import json_turn


def test_no_name_the_pipeline_exports_hides_one_of_its_modules():
    modules = [info.name for info in pkgutil.iter_modules(chat.turns.__path__)]
    assert "follow" in modules and "starting" in modules

    for name in modules:
        module = importlib.import_module(f"chat.turns.{name}")
        assert getattr(chat.turns, name) is module, name
    assert not set(chat.turns.__all__) & set(modules)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_question_asked_over_the_socket_runs_with_the_dependencies_in_use(
    alice, alice_conversation, dependencies
):
    transport = ScriptedTransport([text_response("Hello from the scripted provider.")])
    dependencies(Dependencies(client_factory=lambda: scripted_client(transport)))

    events = await json_turn(alice_conversation, alice, "Hi")

    text = "".join(event["content"] for event in events if event["type"] == "text")
    assert text == "Hello from the scripted provider."
    assert transport.requests[0]["messages"][-1] == {"role": "user", "content": "Hi"}
    assert events[-1]["state"] == "complete"
