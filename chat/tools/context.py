"""What the app hands its tools in each turn's context: the knowledge base and the outbox.
Tests hand turns other services through chat.turns.deps, never by patching a global."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from chat.agent.context import Hit, Search, SearchIndex, ToolContext
from chat.conversations.outbox import outbox_add
from chat.knowledge import search


@dataclass(frozen=True, slots=True)
class KnowledgeSearch:
    """chat.knowledge.search as the agent's `Search` protocol has it."""

    def fresh_index(self) -> SearchIndex | None:
        return search.fresh_index()

    def documents(self, query: str, limit: int) -> Sequence[Hit]:
        return search.search_documents(query, limit)


# Puts an e-mail in the outbox under its sender: keyword arguments owner_id, to, subject, body.
Outbox = Callable[..., Awaitable[object]]


@dataclass(frozen=True, slots=True)
class AppServices:
    search: Search
    outbox: Outbox


type AppContext = ToolContext[AppServices]

APP_SERVICES = AppServices(search=KnowledgeSearch(), outbox=outbox_add)
