from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync

from chat.agent.arithmetic import ArithmeticError_, evaluate
from chat.agent.builtin_tools import CALCULATOR, CURRENT_DATETIME
from chat.agent.loop import run_agent
from chat.agent.policy import AgentPolicy
from chat.agent.tools import FEEDBACK_ARG, ToolError, ToolRegistry, truncate_feedback
from chat.tools.contact_form import REQUEST_CONTACT_FORM
from chat.tools.email import SEND_EMAIL
from chat.tools.search import SEARCH_DOCUMENTS
from chat.turns.deps import builtin_tools
from tests.support.fakes import (
    ScriptedTransport,
    scripted_client,
    text_response,
    tool_call_response,
)
from tests.support.tool_context import tool_context


def test_feedback_of_100_characters_is_kept_whole():
    text = "x" * 100
    assert truncate_feedback(text) == text


def test_longer_feedback_is_cut_to_100_characters_plus_dots():
    text = "Cerco le informazioni " * 10
    cut = truncate_feedback(text)
    assert cut == " ".join(text.split())[:100] + "..."
    assert len(cut) == 103


def test_feedback_whitespace_is_collapsed_before_counting():
    assert truncate_feedback("  Looking\n\n up   salaries ") == "Looking up salaries"


def test_user_facing_tools_require_feedback_to_user_first():
    schema = SEARCH_DOCUMENTS.schema
    parameters = schema["function"]["parameters"]
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "search_documents"
    assert parameters["required"] == [FEEDBACK_ARG, "query"]
    assert next(iter(parameters["properties"])) == FEEDBACK_ARG
    description = parameters["properties"][FEEDBACK_ARG]["description"]
    assert "100 characters" in description
    assert "user's language" in description
    assert parameters["additionalProperties"] is False


def test_the_schema_is_generated_from_the_arguments_model():
    parameters = CURRENT_DATETIME.schema["function"]["parameters"]
    assert parameters["properties"]["timezone"] == {
        "default": "UTC",
        "description": "An IANA time zone such as 'Europe/Rome' or 'Asia/Taipei'.",
        "type": "string",
    }
    assert parameters["required"] == [FEEDBACK_ARG]
    assert "title" not in json.dumps(parameters)


def test_the_email_schema_titles_its_fields_and_says_the_recipient_is_an_address():
    """Declared titles are kept (a card labels the fields with them); pydantic's own, made
    from the names, are not."""
    properties = SEND_EMAIL.schema["function"]["parameters"]["properties"]
    assert {name: p.get("title") for name, p in properties.items()} == {
        FEEDBACK_ARG: None, "to": "To", "subject": "Subject", "body": "Message"
    }  # fmt: skip
    assert properties["to"]["format"] == "email"
    assert properties["body"]["description"] == "The message, in plain text."
    assert SEND_EMAIL.schema["function"]["parameters"].get("title") is None


def test_the_contact_form_does_not_ask_for_feedback():
    parameters = REQUEST_CONTACT_FORM.schema["function"]["parameters"]
    assert FEEDBACK_ARG not in parameters["properties"]
    assert FEEDBACK_ARG not in parameters["required"]


def test_the_default_registry_offers_the_builtin_tools():
    registry = builtin_tools()
    assert [s["function"]["name"] for s in registry.schemas()] == [
        "search_documents",
        "calculator",
        "current_datetime",
        "request_contact_form",
        "send_email",
        "update_plan",
    ]
    assert [name for name, tool in registry.tools.items() if tool.needs_approval] == ["send_email"]
    assert registry.labels()["search_documents"].done == "Searched the knowledge base"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "missing argument 'query'"),
        ({"query": 3}, "argument 'query' has the wrong type"),
        ({"query": "x", "limit": 3}, "unexpected argument 'limit'"),
        ({"query": ""}, "argument 'query' is invalid"),
        ({"query": "x", FEEDBACK_ARG: 7}, "argument 'feedback_to_user' has the wrong type"),
    ],
)
def test_invalid_arguments_are_explained_in_a_few_words(arguments, problem):
    with pytest.raises(ToolError, match=problem):
        SEARCH_DOCUMENTS.parse(arguments)


@pytest.mark.parametrize(
    ("expression", "result"),
    [("2 + 3 * 4", 14), ("(52000 * 1.07) / 12", 4636.666666666667), ("2^10", 1024),
     ("sqrt(16) + abs(-2)", 6), ("7 // 2 + 7 % 2", 4), ("-3 ** 2", -9)],
)  # fmt: skip
def test_the_calculator_does_arithmetic(expression, result):
    assert evaluate(expression) == pytest.approx(result)


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("__import__('os').system('id')", "only numbers"),
        ("(1).__class__", "only numbers"),
        ("9 ** 9 ** 9", "exponent too large"),
        ("1 / 0", "division by zero"),
        ("x + 1", "only numbers"),
        ("", "empty expression"),
        ("1 +", "not an arithmetic expression"),
        ("1" * 300, "expression too long"),
        ("sqrt(-1)", "sqrt of a negative number"),
    ],
)
def test_the_calculator_refuses_anything_but_arithmetic(expression, problem):
    with pytest.raises(ArithmeticError_, match=problem):
        evaluate(expression)


def test_calculator_and_clock_report_what_they_did():
    run = async_to_sync(CALCULATOR.run)
    outcome = run(CALCULATOR.parse({"expression": "1200 * 12"}), tool_context())
    assert outcome.done_message == "Calculated 1200 * 12 = 14,400"
    clock = async_to_sync(CURRENT_DATETIME.run)(
        CURRENT_DATETIME.parse({"timezone": "Asia/Taipei"}), tool_context()
    )
    assert clock.done_message.endswith("in Asia/Taipei")
    with pytest.raises(ToolError, match="unknown time zone"):
        async_to_sync(CURRENT_DATETIME.run)(
            CURRENT_DATETIME.parse({"timezone": "Mars/Base"}), tool_context()
        )


def test_a_deployment_adds_its_own_tool_through_the_setting(settings):
    settings.GLASSBOX_TOOLS = [
        "chat.tools.search.SEARCH_DOCUMENTS",
        "tests.chat.custom_tools.WEATHER",
    ]
    registry = builtin_tools()
    assert [s["function"]["name"] for s in registry.schemas()] == ["search_documents", "weather"]

    raw = json.dumps({"feedback_to_user": "Checking Rome's weather", "city": "Rome"})
    transport = ScriptedTransport(
        [tool_call_response(("c1", "weather", raw), size=8), text_response("Sunny.")]
    )

    async def turn():
        client = scripted_client(transport)
        async with client:
            return [
                event
                async for event in run_agent(
                    client=client,
                    messages=[{"role": "user", "content": "Weather in Rome?"}],
                    registry=registry,
                    policy=AgentPolicy(model="m", max_tool_rounds=2, tool_timeout=5),
                    context=tool_context(),
                )
            ]

    events = async_to_sync(turn)()
    lines = [(e.icon, e.message) for e in events if e.type == "status"]
    assert lines[:3] == [
        ("🌤️", "Checking the weather…"),
        ("🌤️", "Checking Rome's weather"),
        ("🌤️", "It is clear and 21 °C in Rome"),
    ]
    assert "weather" in {t["function"]["name"] for t in transport.requests[0]["tools"]}


def test_a_setting_naming_something_that_is_not_a_tool_fails_loudly():
    with pytest.raises(TypeError, match=r"is not a chat\.agent\.tools\.Tool"):
        ToolRegistry.from_paths(["tests.chat.custom_tools.NOT_A_TOOL"])
    with pytest.raises(ValueError, match="already registered"):
        ToolRegistry.from_paths(["tests.chat.custom_tools.WEATHER"] * 2)
