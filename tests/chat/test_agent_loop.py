from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from activity.presenting.presentation import ToolLabels, line_key
from activity.recording.events import Status, TextDelta, ToolCall, ToolResult
from chat.agent.loop import run_agent
from chat.agent.policy import AgentPolicy
from chat.agent.tools import Tool, ToolError, ToolRegistry
from chat.turns.deps import builtin_tools, configured_client
from tests.support.fakes import (
    RecordedProvider,
    ScriptedTransport,
    scripted_client,
    text_response,
    tool_call_response,
)
from tests.support.tool_context import tool_context

FIXTURES = Path(__file__).parent / "fixtures"

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def collect(client, question: str, registry=None, rounds: int = 3, time_limit=5.0):
    events = []
    async with client:
        async for event in run_agent(
            client=client,
            messages=[{"role": "user", "content": question}],
            registry=registry or builtin_tools(),
            policy=AgentPolicy(
                model="test-model", max_tool_rounds=rounds, tool_timeout=time_limit
            ),
            context=tool_context(),
        ):
            events.append(event)
    return events


def statuses(events):
    return [(e.icon, e.message, e.state) for e in events if isinstance(e, Status)]


def answer(events):
    return "".join(e.content for e in events if isinstance(e, TextDelta))


async def test_demo_model_searches_then_answers_with_the_documents(knowledge_base):
    events = await collect(configured_client(), "How do I negotiate my salary?")
    lines = statuses(events)
    assert lines[0] == ("🔍", "Searching the knowledge base…", "in_progress")
    assert lines[1][0] == "🔍" and "negotiate salary" in lines[1][1]
    assert lines[2:] == [
        ("📄", "Found 3 documents", "done"),
        ("✍️", "Writing the answer…", "in_progress"),
        ("✅", "Done", "done"),
    ]
    call = next(e for e in events if isinstance(e, ToolCall))
    assert call.tool == "search_documents"
    assert call.arguments["query"] == "negotiate salary"
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.ok and result.summary == "3 documents"
    assert "Salary negotiation: preparing your number" in answer(events)
    # Writing starts only once the text does, and nothing of the answer precedes the search.
    writing = next(i for i, e in enumerate(events) if getattr(e, "icon", "") == "✍️")
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert writing == first_text - 1


async def test_demo_model_answers_directly_without_any_status(knowledge_base):
    events = await collect(configured_client(), "Tell me a joke about penguins")
    assert statuses(events) == []
    assert not any(isinstance(e, ToolCall) for e in events)
    assert "penguins" in answer(events)


async def test_feedback_is_shown_before_the_arguments_are_complete():
    raw = json.dumps({"feedback_to_user": "Looking up pay bands", "query": "pay bands in 2026"})
    response = tool_call_response(("call_1", "search_documents", raw), size=1)
    transport = ScriptedTransport([response, text_response("ok")])
    client = scripted_client(transport)
    feedback = None
    async with client:
        async for event in run_agent(
            client=client,
            messages=[{"role": "user", "content": "pay?"}],
            registry=builtin_tools(),
            policy=AgentPolicy(model="m", max_tool_rounds=2, tool_timeout=5),
            context=tool_context(),
        ):
            if isinstance(event, Status) and event.message == "Looking up pay bands":
                feedback = event
                sent_when_shown = transport.streams[0].sent
                break
    assert feedback is not None
    assert feedback.call_id == "call_1" and feedback.state == "in_progress"
    # One character per chunk: the whole query was still to come when the line appeared.
    remaining = len(raw) - raw.index('"query"')
    assert sent_when_shown < len(response) - remaining


async def test_long_feedback_is_truncated_in_the_status_line():
    raw = json.dumps({"feedback_to_user": "a" * 150, "query": "x"})
    transport = ScriptedTransport(
        [tool_call_response(("c1", "search_documents", raw), size=7), text_response("ok")]
    )
    events = await collect(scripted_client(transport), "q")
    assert ("🔍", "a" * 100 + "...", "in_progress") in statuses(events)


async def test_parallel_tool_calls_are_assembled_by_index(knowledge_base):
    first = json.dumps({"feedback_to_user": "Salary tips", "query": "salary"})
    second = json.dumps({"feedback_to_user": "Interview tips", "query": "interview"})
    transport = ScriptedTransport(
        [
            tool_call_response(
                ("c1", "search_documents", first), ("c2", "search_documents", second), size=3
            ),
            text_response("Both found."),
        ]
    )
    events = await collect(scripted_client(transport), "salary and interview?")
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.call_id, c.arguments["query"]) for c in calls] == [
        ("c1", "salary"),
        ("c2", "interview"),
    ]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.ok for r in results] == [True, True]
    # Both results went back to the model in the second request, in order.
    tool_messages = [m for m in transport.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
    assert answer(events) == "Both found."
    # Seed 001: calls of one tool made together each say what they found it for.
    done = [e.message for e in events if isinstance(e, Status) and e.icon == "📄"]
    assert [line.split(" for ")[1] for line in done] == ["“salary”", "“interview”"]
    assert all(line.startswith("Found ") for line in done)


class LookupArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str


def failing_registry(run) -> ToolRegistry:
    return ToolRegistry.of(
        [
            Tool(
                name="lookup",
                description="Looks things up",
                arguments=LookupArguments,
                run=run,
                icon="🔍",
                working_message="Looking it up…",
                labels=ToolLabels("📄", "Looked it up", "Lookup failed"),
            )
        ]
    )


async def broken(arguments, context):
    raise RuntimeError("database password is hunter2")


async def slow(arguments, context):
    await asyncio.sleep(10)


async def explained(arguments, context):
    raise ToolError("index is rebuilding")


@pytest.mark.parametrize(
    ("run", "raw", "reason"),
    [
        (broken, '{"feedback_to_user": "Looking", "query": "x"}', "unexpected error"),
        (slow, '{"feedback_to_user": "Looking", "query": "x"}', "timed out after 0.05 s"),
        (explained, '{"feedback_to_user": "Looking", "query": "x"}', "index is rebuilding"),
        (broken, '{"feedback_to_user": "Looking", "query": ', "malformed arguments"),
        (broken, '{"feedback_to_user": "Looking"}', "missing argument 'query'"),
        (broken, '{"feedback_to_user": "L", "query": 3}', "argument 'query' has the wrong type"),
        (broken, '{"feedback_to_user": "L", "query": "x", "x": 1}', "unexpected argument 'x'"),
    ],
)
async def test_a_failing_tool_falls_back_and_the_turn_still_answers(run, raw, reason):
    transport = ScriptedTransport(
        [tool_call_response(("c1", "lookup", raw), size=4), text_response("From memory: yes.")]
    )
    events = await collect(scripted_client(transport), "q", failing_registry(run), time_limit=0.05)
    lines = statuses(events)
    assert ("❌", f"Lookup failed ({reason})", "failed") in lines
    # Seed 002: 🔄 runs until the answer begins, then is done on the same line.
    failed = lines.index(("❌", f"Lookup failed ({reason})", "failed"))
    assert lines[failed + 1 :] == [
        ("🔄", "Answering from general knowledge", "in_progress"),
        ("🔄", "Answering from general knowledge", "done"),
        ("✍️", "Writing the answer…", "in_progress"),
        ("✅", "Done", "done"),
    ]
    fallback = [e for e in events if isinstance(e, Status) and e.icon == "🔄"]
    assert len({line_key(e) for e in fallback}) == 1
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert events.index(fallback[-1]) < first_text
    assert answer(events) == "From memory: yes."
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.ok and result.summary == reason
    # The model is told only the short reason; secrets in the exception stay server-side.
    tool_message = next(m for m in transport.requests[1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_message["content"]) == {"error": reason}
    assert "hunter2" not in json.dumps(transport.requests[1])
    if run is broken and reason == "unexpected error":
        assert "hunter2" in result.error  # kept for admins


async def test_an_unknown_tool_fails_visibly_and_the_answer_still_comes():
    transport = ScriptedTransport(
        [
            tool_call_response(("c1", "launch_rockets", '{"feedback_to_user": "Go"}')),
            text_response("I cannot do that."),
        ]
    )
    events = await collect(scripted_client(transport), "q")
    assert ("❌", "Unknown tool launch_rockets (unknown tool)", "failed") in statuses(events)
    assert answer(events) == "I cannot do that."


async def test_after_the_last_tool_round_the_model_must_answer_without_tools(knowledge_base):
    raw = json.dumps({"feedback_to_user": "Again", "query": "salary"})
    transport = ScriptedTransport(
        [
            tool_call_response(("c1", "search_documents", raw), size=20),
            tool_call_response(("c2", "search_documents", raw), size=20),
            text_response("Final."),
        ]
    )
    events = await collect(scripted_client(transport), "q", rounds=2)
    assert "tools" in transport.requests[0] and "tools" in transport.requests[1]
    assert "tools" not in transport.requests[2]
    assert answer(events) == "Final."
    seqless = [e for e in events if isinstance(e, ToolCall)]
    assert [c.call_id for c in seqless] == ["c1", "c2"]


async def test_openais_own_wire_format_with_parallel_calls_and_a_usage_chunk(knowledge_base):
    transport = RecordedProvider("openai_parallel_tool_calls.sse", "openai_text.sse")
    events = await collect(scripted_client(transport), "Quanto guadagnerò?")
    assert statuses(events) == [
        ("🔍", "Searching the knowledge base…", "in_progress"),
        ("🔍", "Cerco consigli per la trattativa sullo stipendio", "in_progress"),
        ("🧮", "Calculating…", "in_progress"),
        ("🧮", "Calcolo l'aumento", "in_progress"),
        ("📄", "Found 1 document", "done"),
        ("🧮", "Calculated 2400 * 1.08 = 2,592", "done"),
        ("✍️", "Writing the answer…", "in_progress"),
        ("✅", "Done", "done"),
    ]
    calls = [(e.call_id, e.tool) for e in events if isinstance(e, ToolCall)]
    assert calls == [("call_pQ2rV7sT", "search_documents"), ("call_Zk8mW1nB", "calculator")]
    assert answer(events) == "Ecco cosa ho trovato: **2592** € al mese."
    second = transport.requests[1]["messages"]
    assert [m["tool_call_id"] for m in second if m["role"] == "tool"] == [
        "call_pQ2rV7sT",
        "call_Zk8mW1nB",
    ]
