"""The HTTP client a real provider is reached through. Its own module: the SDK's client it
extends is imported with it, when the first client is made (chat.agent.client)."""

from __future__ import annotations

from typing import Any

import httpx2
from httpcore2._ssl import default_ssl_context
from openai import DefaultAioHttpClient

from chat.agent.faults import NamedFaults


class ProviderHttpClient(DefaultAioHttpClient):
    """The SDK's aiohttp client (direct or through a proxy from the environment), its
    connection faults named as httpx names them (chat.agent.faults)."""

    def __init__(self, **kwargs: Any) -> None:
        # The TLS context httpx2 would make (the system's CAs, or SSL_CERT_FILE and
        # SSL_CERT_DIR), made here so that httpx2 does not import the rest of its transport's
        # package to reach it (project.unused.SDK_TRANSPORT).
        kwargs.setdefault("verify", default_ssl_context())
        super().__init__(**kwargs)

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return NamedFaults(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return NamedFaults(super()._init_proxy_transport(*args, **kwargs))
