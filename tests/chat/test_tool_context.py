"""Every tool call runs with its turn's context: who asks (by id and name, never a row), the
conversation, the language and the app's services, built by the turn pipeline and handed in
(chat.turns.deps); no tool reaches the app through a global."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel, ConfigDict

from activity.presenting.presentation import ToolLabels
from chat.agent.client import Provider, make_client
from chat.agent.context import Person
from chat.agent.demo import DemoModel
from chat.agent.mcp.connections import pool
from chat.agent.mcp.limits import McpLimits
from chat.agent.mcp.tools import tools_of
from chat.agent.tools import Tool, ToolOutcome, ToolRegistry
from chat.models import OutboxEmail
from chat.tools.context import APP_SERVICES, AppContext
from chat.tools.email import SEND_EMAIL
from chat.turns import deps
from tests.support.fakes import (
    ScriptedTransport,
    scripted_client,
    text_response,
    tool_call_response,
)
from tests.support.mcp import stdio
from tests.support.sockets import json_turn
from tests.support.tool_context import tool_context
from tests.support.turns import run_turn


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def whoami(seen: list[AppContext]) -> Tool:
    async def run(arguments: NoArguments, context: AppContext) -> ToolOutcome:
        seen.append(context)
        return ToolOutcome(
            content={"you": context.user.name},
            summary=context.user.name,
            done_message=f"You are {context.user.name}",
        )

    return Tool(
        name="whoami",
        description="Who is asking.",
        arguments=NoArguments,
        run=run,
        icon="🪪",
        working_message="Looking you up…",
        labels=ToolLabels("🪪", "Looked you up", "Lookup failed"),
        user_facing=False,
    )


def calling_whoami(seen: list[AppContext]) -> deps.Dependencies:
    """A model that calls `whoami` once, then answers; the tool keeps what it was told."""
    transport = ScriptedTransport(
        [tool_call_response(("call_1", "whoami", json.dumps({}))), text_response("Done.")]
    )

    async def tools(asker: object) -> ToolRegistry:
        return ToolRegistry.of([whoami(seen)])

    return deps.Dependencies(client_factory=lambda: scripted_client(transport), tools=tools)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_tool_is_told_who_asks_where_and_in_which_language(alice, alice_conversation):
    seen: list[AppContext] = []
    with deps.using(calling_whoami(seen)):
        events = await json_turn(alice_conversation, alice, "Who am I?")

    assert [context.user for context in seen] == [Person(id=alice.pk, name="alice")]
    assert seen[0].conversation_id == str(alice_conversation.pk)
    assert seen[0].language == "en"
    assert seen[0].services is APP_SERVICES
    done = [e["message"] for e in events if e["type"] == "status" and e["state"] == "done"]
    assert "You are alice" in done


@pytest.mark.django_db(transaction=True)
def test_a_turn_run_without_its_admission_reads_who_asks(bob):
    """A resumed turn (after an approval) is not handed its asker: the runner reads it."""
    from chat.models import Conversation

    conversation = Conversation.objects.create(owner=bob)
    seen: list[AppContext] = []
    answer = run_turn(conversation, "Who am I?", calling_whoami(seen))

    assert answer.state == "complete"
    assert [context.user for context in seen] == [Person(id=bob.pk, name="bob")]
    assert seen[0].conversation_id == str(conversation.pk)


@pytest.mark.django_db(transaction=True)
def test_an_email_is_filed_under_the_person_whose_turn_sent_it(alice, bob):
    arguments = SEND_EMAIL.parse({"to": "dean@example.com", "subject": "Hi", "body": "Hello"})
    outcome = async_to_sync(SEND_EMAIL.run)(
        arguments, tool_context(user=Person(id=bob.pk, name="bob"))
    )

    assert outcome.done_message == "The email to dean@example.com is in the outbox"
    email = OutboxEmail.objects.get()
    assert (email.owner_id, email.to) == (bob.pk, "dean@example.com")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_demo_model_searches_only_what_it_is_handed(knowledge_base):
    question = "How do I negotiate my salary?"
    handed = await DemoModel(APP_SERVICES.search).plan(question, "en", {"search_documents"})
    assert [[call.tool for call in calls] for calls in handed] == [["search_documents"]]
    assert await DemoModel().plan(question, "en", {"search_documents"}) == []


def test_the_client_is_the_provider_handed_in_whatever_the_settings_say(settings):
    settings.OPENAI_API_KEY = ""
    handed = Provider(
        api_key="sk-test",
        base_url="http://llm.internal:8080/v1",
        demo_delay=0,
        connect_timeout=3,
        read_timeout=7,
        retries=1,
    )

    async def client():
        return make_client(handed)

    made = async_to_sync(client)()
    assert str(made.base_url) == "http://llm.internal:8080/v1/"
    assert (made.timeout.connect, made.timeout.read, made.max_retries) == (3, 7, 1)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_mcp_result_is_cut_at_the_limit_handed_in_whatever_the_settings_say(
    settings, sessions
):
    settings.GLASSBOX_MCP_RESULT_CHARS = 8000
    connected = await pool().connect([stdio("bench")], McpLimits(result_chars=7))
    count = next(tool for tool in tools_of(connected) if tool.name == "bench__count")

    outcome = await count.run(count.parse({"steps": 2}), tool_context())

    assert outcome.content == "counted\n[cut: the result was 12 characters]"
