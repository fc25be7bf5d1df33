"""What a tool call runs with besides its arguments: who asks, in which conversation and
language, and the app's services the tools need, built for each turn by whoever runs it
(chat.turns.deps) and handed to every tool run. Never a global: a tool knows its asker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Hit(Protocol):
    @property
    def title(self) -> str: ...
    @property
    def snippet(self) -> str: ...
    @property
    def score(self) -> float: ...


class SearchIndex(Protocol):
    @property
    def documents(self) -> Mapping[Any, Any]: ...

    def search(self, query: str, limit: int = ...) -> Sequence[Hit]: ...


class Search(Protocol):
    """The knowledge base as the search tool and the demo model use it."""

    def fresh_index(self) -> SearchIndex | None:
        """The index when it is in memory and known current, else None."""
        ...

    def documents(self, query: str, limit: int) -> Sequence[Hit]:
        """A search through the database (blocking: it runs in the database thread)."""
        ...


@dataclass(frozen=True, slots=True)
class Person:
    """Who asked for the turn: their id and the name people know them by, never a row."""

    id: int
    name: str


@dataclass(frozen=True, slots=True)
class ToolContext[S]:
    """One turn's context, the same for each of its tool calls. `services` is what the app
    hands its tools (chat.tools.context): the agent only carries it."""

    user: Person
    conversation_id: str
    language: str
    services: S
