"""Every path of the agent is reachable in the demo, with the prompts the README lists."""

from __future__ import annotations

import pytest

from activity.recording.events import Plan, Status, TextDelta, ToolCall, ToolResult
from chat.agent.loop import run_agent
from chat.agent.policy import AgentPolicy
from chat.tools.context import APP_SERVICES
from chat.turns.deps import builtin_tools, configured_client
from tests.support.tool_context import tool_context

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def turn(question: str):
    events = []
    async with configured_client() as client:
        async for event in run_agent(
            client=client,
            messages=[{"role": "user", "content": question}],
            registry=builtin_tools(),
            policy=AgentPolicy(model="glassbox-demo", tool_timeout=5),
            context=tool_context(),
        ):
            events.append(event)
    lines = [(e.icon, e.message) for e in events if isinstance(e, Status)]
    answer = "".join(e.content for e in events if isinstance(e, TextDelta))
    return events, lines, answer


async def test_a_direct_answer(knowledge_base):
    _, lines, answer = await turn("Tell me a joke")
    assert lines == []
    assert "without tools" in answer


async def test_one_search(knowledge_base):
    _, lines, answer = await turn("How do I negotiate my salary?")
    assert [icon for icon, _ in lines] == ["🔍", "🔍", "📄", "✍️", "✅"]
    assert "Salary negotiation" in answer


async def test_two_tools_in_sequence(knowledge_base):
    events, lines, answer = await turn("What time is it, and how do I prepare for an interview?")
    calls = [e.tool for e in events if isinstance(e, ToolCall)]
    assert calls == ["current_datetime", "search_documents"]
    # The second tool starts only after the first one's result.
    first_result = next(i for i, e in enumerate(events) if isinstance(e, ToolResult))
    second_call = [i for i, e in enumerate(events) if isinstance(e, ToolCall)][1]
    assert first_result < second_call
    assert [icon for icon, _ in lines][-2:] == ["✍️", "✅"]
    assert "It is now" in answer and "Preparing for a job interview" in answer


async def test_two_tools_in_parallel(knowledge_base):
    events, _, answer = await turn("Compare salary negotiation and interview preparation")
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.tool for c in calls] == ["search_documents", "search_documents"]
    # Both calls were announced before either ran: one round, two calls.
    announced = [i for i, e in enumerate(events) if isinstance(e, Status) and e.icon == "🔍"]
    assert len(announced) == 4
    assert max(announced) < events.index(calls[0])
    assert answer.count("Here is what the knowledge base says:") == 2


async def test_a_tool_failure_falls_back(knowledge_base):
    events, lines, answer = await turn("Simulate a failure while looking up salaries")
    assert ("❌", "Knowledge base query failed (missing argument 'query')") in lines
    assert ("🔄", "Answering from general knowledge") in lines
    assert "could not use search_documents" in answer
    assert next(e for e in events if isinstance(e, ToolResult)).ok is False


async def test_the_contact_form(knowledge_base):
    events, lines, answer = await turn("I would like to talk to a human advisor")
    assert [e.tool for e in events if isinstance(e, ToolCall)] == ["request_contact_form"]
    assert ("📝", "Opened a contact form") in lines
    assert "contact form below" in answer


async def test_a_calculation(knowledge_base):
    _, lines, answer = await turn("What is 52,000 * 1.07 / 12?")
    assert ("🧮", "Calculating 52000 * 1.07 / 12") in lines
    assert ("🧮", "Calculated 52000 * 1.07 / 12 = 4,636.67") in lines
    assert "= **4636.666666666667**" in answer


@pytest.mark.parametrize(
    ("question", "feedback", "answer_start"),
    [
        ("Come posso negoziare lo stipendio?", "Cerco “negoziare stipendio”", "Ecco cosa"),
        ("我該如何談判薪資？", "正在知識庫中查詢「我該如何談判薪資」", "以下是知識庫"),
    ],
)
async def test_feedback_and_answer_follow_the_language_of_the_question(
    knowledge_base, question, feedback, answer_start
):
    _, lines, answer = await turn(question)
    assert any(message.startswith(feedback) for _, message in lines)
    assert answer.startswith(answer_start)


async def test_a_server_not_open_yet_is_opened_by_its_connect_tool_only_when_needed():
    from chat.agent.demo import DemoModel

    def tools(rounds) -> list[list[str]]:
        return [[call.tool for call in calls] for calls in rounds]

    model, question = DemoModel(), "Compare salary surveys for an engineer"
    survey = "surveys__compare_salary_surveys"
    assert await model.plan("Tell me a joke", "en", {"connect_surveys"}) == []
    assert tools(await model.plan(question, "en", {"connect_surveys"})) == [["connect_surveys"]]
    opened = await model.plan(question, "en", {"connect_surveys", survey}, {"connect_surveys"})
    assert tools(opened) == [["connect_surveys"], [survey]]
    named = await model.plan("notes__whoami {}", "en", {"connect_notes"})
    assert tools(named) == [["connect_notes"]]


@pytest.mark.parametrize("language", ["en", "it", "zh-hant"])
async def test_each_starter_takes_its_own_path_in_every_language(language, knowledge_base):
    """The new conversation's starters, as each page language shows them."""
    from django.utils import translation

    from chat.agent.demo import DemoModel, detect_language
    from chat.pages.starters import for_page

    offered = {
        "search_documents", "current_datetime", "send_email", "request_contact_form",
        "calculator", "surveys__compare_salary_surveys", "surveys__draft_offer_letter",
    }  # fmt: skip
    expected = [
        ["search_documents"],
        ["current_datetime", "search_documents"],
        ["surveys__compare_salary_surveys"],
        ["send_email"],
        ["surveys__draft_offer_letter"],
        ["request_contact_form"],
    ]
    with translation.override(language):
        prompts = [starter.prompt for starter in for_page()]
    model = DemoModel(APP_SERVICES.search)
    taken = []
    for prompt in prompts:
        rounds = await model.plan(prompt, detect_language(prompt), offered)
        taken.append([call.tool for calls in rounds for call in calls])
    assert taken == expected, prompts


def _tool(name: str, *required: str) -> dict:
    parameters = {"type": "object", "required": ["feedback_to_user", *required]}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


NOTES_TOOLS = [_tool("notes__whoami"), _tool("notes__write_note", "text")]
OPENED = "notes is open; its tools are offered now: notes__whoami, notes__write_note"


def _called(call_id: str, tool: str, result: str) -> list[dict]:
    """An assistant round that called `tool`, and the tool's message with `result`."""
    function = {"name": tool, "arguments": "{}"}
    return [
        {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function",
                                              "function": function}]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]  # fmt: skip


async def _respond(question: str, tools: list[dict], since_question: list[dict]):
    """What the demo streams for one round: the tools it calls, else its answer."""
    from chat.agent.demo import DemoModel

    body = {"messages": [{"role": "user", "content": question}, *since_question], "tools": tools}
    deltas = await DemoModel(APP_SERVICES.search).respond(body)
    calls = [c["function"]["name"] for d in deltas for c in d.get("tool_calls") or [] if "id" in c]
    return calls, "".join(d.get("content") or "" for d in deltas)


async def test_after_connecting_the_answer_is_the_servers_tools_not_a_failure_to_open_it():
    connected = _called("c1", "connect_notes", OPENED)
    whoami = _called("c2", "notes__whoami", "you are alice@notes")

    calls, _ = await _respond("notes__whoami {}", [_tool("connect_notes"), *NOTES_TOOLS],
                              connected)  # fmt: skip
    assert calls == ["notes__whoami"]
    _, answer = await _respond("notes__whoami {}", NOTES_TOOLS, [*connected, *whoami])
    assert answer == 'The tool notes__whoami answered: "you are alice@notes"'


async def test_a_server_opened_for_a_question_none_of_its_tools_answer_still_answers_with_one():
    # A survey question opens every server not open yet; this one has no survey tool, and
    # its tool that needs no argument answers rather than nothing (or a failure).
    question = "Compare salary surveys for an engineer"
    connected = _called("c1", "connect_notes", OPENED)

    calls, _ = await _respond(question, [_tool("connect_notes"), *NOTES_TOOLS], connected)
    assert calls == ["notes__whoami"]
    whoami = _called("c2", "notes__whoami", "you are alice@notes")
    _, answer = await _respond(question, NOTES_TOOLS, [*connected, *whoami])
    assert answer == 'The tool notes__whoami answered: "you are alice@notes"'
    # A server with no such tool: the answer says it is open, in the user's language.
    only_writes = [_tool("notes__write_note", "text")]
    calls, answer = await _respond("Confronta i sondaggi", only_writes, connected)
    assert calls == [] and answer.startswith("notes ora è aperto")


async def test_a_server_that_did_not_open_is_named_with_why_and_no_tool_of_it_is_called():
    refused = _called("c1", "connect_notes", '{"error": "you declined"}')

    calls, answer = await _respond("notes__whoami {}", [_tool("connect_notes")], refused)

    assert calls == []
    assert answer == "I could not open notes (you declined), so this answer does not use it."


@pytest.mark.parametrize(
    ("question", "first_step"),
    [
        (
            "Plan it step by step: what time is it, and how do I prepare for an interview?",
            "Checking the current date and time",
        ),
        (
            "Passo dopo passo: che ora è, e come preparo un colloquio?",
            "Controllo la data e l'ora attuali",
        ),
    ],
)
async def test_a_question_that_asks_for_a_plan_gets_one_ticked_off_round_by_round(
    knowledge_base, question, first_step
):
    events, _, answer = await turn(question)
    plans = [e for e in events if isinstance(e, Plan)]
    assert [[step.state for step in plan.steps] for plan in plans] == [
        ["in_progress", "pending"],
        ["done", "in_progress"],
        ["done", "done"],
    ]
    assert plans[0].steps[0].text == first_step
    calls = [e.tool for e in events if isinstance(e, ToolCall)]
    assert calls == ["update_plan", "current_datetime", "update_plan", "search_documents",
                     "update_plan"]  # fmt: skip
    assert answer  # planning says nothing of its own in the answer


async def test_a_one_round_question_is_not_planned(knowledge_base):
    events, _, _ = await turn("Plan how I negotiate my salary")
    assert not [e for e in events if isinstance(e, Plan)]
