"""What a turn runs with besides its rows and its policy: the model's client and the tools.
One object, read when a turn starts; tests hand turns a scripted provider or tools of their
own by replacing it for a while (`using`), never through the pipeline's signatures."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from openai import AsyncOpenAI

from chat.agent.builtin_tools import default_registry
from chat.agent.client import make_client
from chat.agent.mcp import offer_tools
from chat.agent.tools import ToolRegistry
from chat.servers.asking import ConnectAsker
from chat.servers.configured import configured_servers
from chat.servers.heartbeat import after_first_look


async def configured_tools(asker: ConnectAsker | None = None) -> ToolRegistry:
    """The built-in tools and those of the MCP servers that are connected now; a server the
    turn would have to wait for (or, with an asker, that its user has not connected) is
    offered as one tool that opens it when the model needs it (asked for in the feed)."""
    await after_first_look()
    registry = default_registry().with_tools([])
    await offer_tools(registry, await configured_servers(), asker)
    return registry


@dataclass(frozen=True, slots=True)
class Dependencies:
    # The client is shared by the turns of this process (see make_client).
    client_factory: Callable[[], AsyncOpenAI] = make_client
    tools: Callable[[ConnectAsker | None], Awaitable[ToolRegistry]] = configured_tools


_current = Dependencies()


def current() -> Dependencies:
    return _current


@contextlib.contextmanager
def using(dependencies: Dependencies) -> Iterator[Dependencies]:
    """Turns that start meanwhile, in any task or thread of this process, run with
    `dependencies`; the ones before come back at the end."""
    global _current
    before, _current = _current, dependencies
    try:
        yield dependencies
    finally:
        _current = before
