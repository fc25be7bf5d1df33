"""The HTTP client a real provider is reached through. Its own module: the SDK's client it
extends is imported with it, when the first client is made (chat.agent.client)."""

from __future__ import annotations

from typing import Any

import httpx2
from openai import DefaultAioHttpClient

from chat.agent.faults import NamedFaults


class ProviderHttpClient(DefaultAioHttpClient):
    """The SDK's aiohttp client (direct or through a proxy from the environment), its
    connection faults named as httpx names them (chat.agent.faults)."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return NamedFaults(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return NamedFaults(super()._init_proxy_transport(*args, **kwargs))
