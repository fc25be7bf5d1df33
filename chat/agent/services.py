"""What the agent runtime uses outside itself, the knowledge base and the outbox, handed in by
the app when it is ready (chat.apps calls `provide`): the agent imports no models, and an
import contract says so."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
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


@dataclass(frozen=True)
class Services:
    """What the built-in tools and the demo model use outside the agent runtime."""

    # The knowledge base's index when it is in memory and known current, else None.
    fresh_index: Callable[[], SearchIndex | None]
    # A search through the database (blocking: it runs in the database thread).
    search_documents: Callable[[str, int], Sequence[Hit]]
    # Puts an email in the outbox: keyword arguments to, subject, body.
    outbox_add: Callable[..., Awaitable[object]]


_services: Services | None = None


def provide(services: Services) -> None:
    """Hands the agent runtime what it uses; the app does so once, when it is ready."""
    global _services
    _services = services


def provided() -> Services:
    if _services is None:
        raise RuntimeError("the agent runtime was not provided its services (chat.apps)")
    return _services
