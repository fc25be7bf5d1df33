from __future__ import annotations

from activity.presentation import ToolLabels
from chat.agent.builtin_tools import SEARCH_DOCUMENTS, default_registry
from chat.agent.tools import FEEDBACK_ARG, Tool, ToolOutcome, truncate_feedback


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
    schema = SEARCH_DOCUMENTS.schema()
    parameters = schema["function"]["parameters"]
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "search_documents"
    assert parameters["required"][0] == FEEDBACK_ARG
    assert "query" in parameters["required"]
    assert next(iter(parameters["properties"])) == FEEDBACK_ARG
    description = parameters["properties"][FEEDBACK_ARG]["description"]
    assert "100 characters" in description
    assert "user's language" in description
    assert parameters["additionalProperties"] is False


def test_internal_tools_do_not_ask_for_feedback():
    async def run(**_):
        return ToolOutcome(content=[], summary="", done_message="")

    tool = Tool(
        name="internal",
        description="not shown",
        parameters={"type": "object", "properties": {}},
        run=run,
        icon="⚙️",
        working_message="Working…",
        labels=ToolLabels("⚙️", "Worked", "Failed"),
        user_facing=False,
    )
    assert FEEDBACK_ARG not in tool.schema()["function"]["parameters"]["properties"]


def test_the_default_registry_offers_search_documents():
    registry = default_registry()
    assert [s["function"]["name"] for s in registry.schemas()] == ["search_documents"]
    assert registry.labels()["search_documents"].done == "Searched the knowledge base"
