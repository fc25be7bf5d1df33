"""The built-in tools that touch the app (the knowledge base, the outbox, the page's contact
form), one module each, run with the turn's context (chat.tools.context); the pure ones
(arithmetic, the clock) stay with the agent (chat.agent.builtin_tools). The agent never
imports this package: the turn pipeline hands it the registry (chat.turns.deps)."""

from __future__ import annotations

from collections.abc import Iterable

from chat.agent.tools import ToolRegistry


def registry_of(paths: Iterable[str]) -> ToolRegistry:
    """The tools GLASSBOX_TOOLS names by dotted path, read by the caller."""
    return ToolRegistry.from_paths(paths)
