"""A burst of turns reuses its connections to the provider: the second of two bursts of
more requests than the SDK keeps by default opens no new connection."""

from __future__ import annotations

import asyncio

from chat.turns.deps import configured_client
from tests.support.completions import ask
from tests.support.keepalive_provider import keepalive_provider

BURST = 105  # above the 100 idle connections the openai SDK keeps by default


def test_a_second_burst_of_requests_opens_no_new_connection(settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.GLASSBOX_PROVIDER_RETRIES = 0

    async def bursts() -> tuple[int, int]:
        async with keepalive_provider() as provider:
            settings.OPENAI_BASE_URL = provider.url
            client = configured_client()
            provider.next_burst(BURST)
            assert await asyncio.gather(*(ask(client) for _ in range(BURST))) == ["Hello"] * BURST
            first = provider.connections
            provider.next_burst(BURST)
            await asyncio.gather(*(ask(client) for _ in range(BURST)))
            await client.close()
            return first, provider.connections

    assert asyncio.run(bursts()) == (BURST, BURST)
