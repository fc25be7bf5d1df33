"""What the app hands its tools in each turn's context: the knowledge base and the outbox.
Tests hand turns other services through chat.turns.deps, never by patching a global."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from chat.agent.context import Search, ToolContext
from chat.conversations.outbox import outbox_add
from chat.knowledge import search


@dataclass(frozen=True, slots=True)
class KnowledgeSearch:
    """chat.knowledge.search as the agent's `Search` protocol has it (its own functions, so
    a trip to the database thread is named after what it runs)."""

    fresh_index = staticmethod(search.fresh_index)
    documents = staticmethod(search.search_documents)


# Puts an e-mail in the outbox under its sender: keyword arguments owner_id, to, subject, body.
Outbox = Callable[..., Awaitable[object]]


@dataclass(frozen=True, slots=True)
class AppServices:
    search: Search
    outbox: Outbox


type AppContext = ToolContext[AppServices]

APP_SERVICES = AppServices(search=KnowledgeSearch(), outbox=outbox_add)
