"""The knowledge base search tool."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from pydantic import Field

from activity.presenting.presentation import ToolLabels
from chat.agent.tools import Arguments, Tool, ToolOutcome
from chat.tools.context import AppContext


class SearchArguments(Arguments):
    query: str = Field(description="What to look for, in a few words.", min_length=1)


SEARCH_LIMIT = 3
INLINE_SEARCH_DOCUMENTS = 500


async def run_search_documents(arguments: SearchArguments, context: AppContext) -> ToolOutcome:
    search = context.services.search
    index = search.fresh_index()
    # In memory and known current: a small one is searched here, with no trip to a thread;
    # a large one's search would hold up every other turn on the event loop.
    if index is not None and len(index.documents) <= INLINE_SEARCH_DOCUMENTS:
        hits = index.search(arguments.query, limit=SEARCH_LIMIT)
    else:
        hits = await sync_to_async(search.documents)(arguments.query, SEARCH_LIMIT)
    count = len(hits)
    return ToolOutcome(
        content=[{"title": h.title, "snippet": h.snippet, "score": h.score} for h in hits],
        summary=ngettext("%(count)d document", "%(count)d documents", count) % {"count": count},
        done_message=(
            ngettext("Found %(count)d document", "Found %(count)d documents", count)
            % {"count": count}
            if count
            else _("No matching documents")
        ),
        subject=arguments.query,
    )


SEARCH_DOCUMENTS = Tool(
    name="search_documents",
    description=(
        "Search the company knowledge base (career advice: salaries, interviews, CVs, "
        "reviews, remote work, in several languages). Returns the best-matching documents."
    ),
    arguments=SearchArguments,
    run=run_search_documents,
    title=gettext_lazy("Search the knowledge base"),
    icon="🔍",
    working_message=gettext_lazy("Searching the knowledge base…"),
    labels=ToolLabels(
        icon="📄",
        done=gettext_lazy("Searched the knowledge base"),
        failed=gettext_lazy("Knowledge base query failed"),
    ),
)
