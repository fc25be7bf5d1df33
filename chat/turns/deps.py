"""What a turn runs with besides its rows and its policy: the model's client, the tools and
the app's services its tools are handed in their context. One object, read when a turn
starts; tests hand turns a scripted provider, tools or services of their own by replacing it
for a while (`using`), never through the pipeline's signatures. The settings the agent
needs are read here and handed in: the agent reads none."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from chat.agent.client import SDK, Provider, make_client
from chat.agent.context import Person, ToolContext
from chat.agent.mcp import offer_tools
from chat.agent.tools import ToolRegistry
from chat.servers.asking import ConnectAsker
from chat.servers.configured import configured_servers, mcp_limits
from chat.servers.heartbeat import after_first_look
from chat.tools import registry_of
from chat.tools.context import APP_SERVICES, AppContext, AppServices
from project.warming import import_aside

if TYPE_CHECKING:
    from openai import AsyncOpenAI


def provider() -> Provider:
    return Provider(
        api_key=settings.OPENAI_API_KEY,
        base_url=settings.OPENAI_BASE_URL,
        demo_delay=settings.GLASSBOX_DEMO_DELAY,
        connect_timeout=settings.GLASSBOX_CONNECT_TIMEOUT,
        read_timeout=settings.GLASSBOX_READ_TIMEOUT,
        retries=settings.GLASSBOX_PROVIDER_RETRIES,
    )


def configured_client(transport: httpx2.AsyncBaseTransport | None = None) -> AsyncOpenAI:
    """The settings' provider (the demo model searching the knowledge base without a key);
    `transport` replaces its network, as make_client says."""
    return make_client(provider(), APP_SERVICES.search, transport)


def expect_questions() -> None:
    """Someone may ask soon (a socket opened): the model's client, which the server does not
    load until then, is imported on a thread now, not by the first question on the event
    loop (about 330 ms on this 2-core machine)."""
    import_aside(SDK)


# What sdk_imported has seen imported whole, once a process.
_imported: set[str] = set()


async def sdk_imported() -> None:
    """The model's SDK imported off the event loop before a turn makes its client: imported
    on it, the process's every socket, stream and heartbeat stopped for its duration (a third
    of a second here, seconds on a loaded machine: long enough for another process to take
    the turn's heartbeat for dead)."""
    if SDK in _imported:
        return
    # Waited for on a thread even when sys.modules has it: a module is there from the start
    # of its import, and another thread's (expect_questions, as a socket opens) holds its
    # lock until the end, which the loop would wait on (half a second of every socket's,
    # for a question asked as its socket opened).
    await asyncio.to_thread(importlib.import_module, SDK)
    _imported.add(SDK)


def builtin_tools() -> ToolRegistry:
    """The tools GLASSBOX_TOOLS names."""
    return registry_of(settings.GLASSBOX_TOOLS)


async def configured_tools(asker: ConnectAsker | None = None) -> ToolRegistry:
    """The built-in tools and those of the MCP servers that are connected now; a server the
    turn would have to wait for (or, with an asker, that its user has not connected) is
    offered as one tool that opens it when the model needs it (asked for in the feed)."""
    await after_first_look()
    registry = builtin_tools()
    await offer_tools(registry, await configured_servers(), asker, mcp_limits())
    return registry


def person(user: AbstractBaseUser) -> Person:
    """Who asks, as a tool is told: never the row itself."""
    assert user.pk is not None  # a turn's owner is saved
    return Person(id=user.pk, name=user.get_username())


def person_by_id(user_id: int) -> Person:
    """As `person`, read from the database (blocking)."""
    users = get_user_model().objects
    return person(users.only(users.model.USERNAME_FIELD).get(pk=user_id))


@dataclass(frozen=True, slots=True)
class Dependencies:
    # The client is shared by the turns of this process (see make_client).
    client_factory: Callable[[], AsyncOpenAI] = configured_client
    tools: Callable[[ConnectAsker | None], Awaitable[ToolRegistry]] = configured_tools
    # What the tools reach of the app, in each call's context.
    services: AppServices = APP_SERVICES

    def tool_context(
        self, *, user: Person, conversation_id: uuid.UUID, language: str
    ) -> AppContext:
        """The context every tool call of one turn runs with."""
        return ToolContext(
            user=user,
            conversation_id=str(conversation_id),
            language=language,
            services=self.services,
        )


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
