"""The tools every Glassbox agent has."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from activity.presentation import ToolLabels
from chat.agent.tools import Tool, ToolOutcome, ToolRegistry
from chat.search import search_documents


async def run_search_documents(query: str, **_: object) -> ToolOutcome:
    hits = await sync_to_async(search_documents)(query)
    count = len(hits)
    found = "Found 1 document" if count == 1 else f"Found {count} documents"
    return ToolOutcome(
        content=[{"title": h.title, "snippet": h.snippet, "score": h.score} for h in hits],
        summary="1 document" if count == 1 else f"{count} documents",
        done_message=found if count else "No matching documents",
    )


SEARCH_DOCUMENTS = Tool(
    name="search_documents",
    description=(
        "Search the company knowledge base (career advice: salaries, interviews, CVs, "
        "reviews, remote work, in several languages). Returns the best-matching documents."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in a few words."}
        },
        "required": ["query"],
    },
    run=run_search_documents,
    icon="🔍",
    working_message="Searching the knowledge base…",
    labels=ToolLabels(
        icon="📄", done="Searched the knowledge base", failed="Knowledge base query failed"
    ),
)


def default_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(SEARCH_DOCUMENTS)
    return registry
