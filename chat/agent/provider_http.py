"""The model's SDK as a turn uses it: its client, and the HTTP client a real provider is
reached through. Its own module, imported when the first client is made (chat.agent.client)
or ahead of it (chat.turns.deps.expect_questions).

The SDK's classes are imported from their own modules: the package's `__init__`, deferred
(project.unused.SDK_PACKAGES), would import its helpers for every API's tools and types."""

from __future__ import annotations

from typing import Any

import httpx2
from httpcore2._ssl import default_ssl_context
from openai._base_client import DefaultAioHttpClient
from openai._client import AsyncOpenAI

from chat.agent.faults import NamedFaults

__all__ = ["AsyncOpenAI", "ProviderHttpClient"]


class ProviderHttpClient(DefaultAioHttpClient):
    """The SDK's aiohttp client (direct or through a proxy from the environment), its
    connection faults named as httpx names them (chat.agent.faults)."""

    def __init__(self, **kwargs: Any) -> None:
        # The TLS context httpx2 would make (the system's CAs, or SSL_CERT_FILE and
        # SSL_CERT_DIR), made here so that httpx2 does not import the rest of its transport's
        # package to reach it (project.unused.SDK_TRANSPORT).
        if "verify" not in kwargs:
            kwargs["verify"] = default_ssl_context(_trust_env=kwargs.get("trust_env", True))
        super().__init__(**kwargs)

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return NamedFaults(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return NamedFaults(super()._init_proxy_transport(*args, **kwargs))
