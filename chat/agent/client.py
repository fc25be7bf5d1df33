"""The LLM client factory: a real OpenAI-compatible provider when a key is set, otherwise
the offline demo model behind the very same openai client. Which provider, and how long to
wait for it, is handed in (`Provider`, read from the settings by chat.turns.deps)."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2

from chat.agent.context import Search
from chat.agent.demo import DemoModel
from chat.agent.demo_wire import DemoTransport

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# What a client is made with, imported by make_client: the turn pipeline may import it ahead
# (chat.turns.deps.expect_questions).
SDK = "chat.agent.provider_http"

# One client per event loop and configuration: building one creates an SSL context, which
# profiling showed to be most of a turn's CPU time when every turn made its own.
_shared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

# As many idle connections kept as may be open: with the SDK's default (100 kept of 1,000),
# a burst of 300 turns closed and reopened 200 connections for each of its requests, and
# opening them cost more CPU than the SDK's whole request building (py-spy, 300 sessions).
# Idle ones are kept 30 s (httpx's default is 5): a busy process's bursts come further apart
# than that, and each reopened connection costs more than its idle socket.
CONNECTIONS = httpx2.Limits(
    max_connections=1000, max_keepalive_connections=1000, keepalive_expiry=30
)


@dataclass(frozen=True, slots=True)
class Provider:
    """The model's provider: none (the demo model) without a key."""

    api_key: str
    base_url: str
    # The demo model's pause between streamed chunks, in seconds.
    demo_delay: float
    connect_timeout: float
    read_timeout: float
    # How often the SDK tries a request again that failed before its first byte.
    retries: int

    @property
    def is_demo(self) -> bool:
        return not self.api_key


def make_client(
    provider: Provider,
    search: Search | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncOpenAI:
    """The shared client of this event loop for `provider` (the demo model searching with
    `search`); `transport` makes a new one whose network is replaced (tests inject faults
    and scripted providers)."""
    if transport is not None:
        return _new_client(provider, search, transport)
    key = (provider, search)
    clients = _shared.setdefault(asyncio.get_running_loop(), {})
    if key not in clients:
        clients[key] = _new_client(provider, search, None)
    return clients[key]


def _new_client(
    provider: Provider, search: Search | None, transport: httpx2.AsyncBaseTransport | None
) -> AsyncOpenAI:
    # The SDK (with aiohttp, about 16 MiB with its first client and request) is
    # imported with the first client, not with the server: a process that never serves a
    # turn never loads it.
    from chat.agent.provider_http import AsyncOpenAI, ProviderHttpClient

    timeout = httpx2.Timeout(provider.read_timeout, connect=provider.connect_timeout)
    if provider.is_demo:
        demo = DemoTransport(delay=provider.demo_delay, model=DemoModel(search))
        return AsyncOpenAI(
            api_key="demo",
            base_url="http://demo.glassbox.invalid/v1",
            http_client=httpx2.AsyncClient(transport=transport or demo, timeout=timeout),
            max_retries=0,
        )
    # The SDK retries only failed requests, i.e. before the first streamed byte; a stream
    # that breaks after text was shown is never replayed.
    # The SDK's own client (it follows redirects) on its aiohttp transport, with connections
    # kept for a burst: the same requests for about a tenth less of a turn's CPU than on
    # httpcore, whose cancel scopes and readers wrapped every streamed chunk (py-spy, peer
    # bench at 100 sessions).
    http_client = ProviderHttpClient(transport=transport, timeout=timeout, limits=CONNECTIONS)
    return AsyncOpenAI(
        api_key=provider.api_key,
        base_url=provider.base_url or None,
        timeout=timeout,
        max_retries=provider.retries,
        http_client=http_client,
    )


async def close_clients() -> None:
    """Closes this event loop's shared clients and their connections, before the loop ends."""
    for client in _shared.pop(asyncio.get_running_loop(), {}).values():
        await client.close()
