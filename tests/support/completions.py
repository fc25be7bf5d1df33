"""One streamed completion's text through the configured client, for tests of its HTTP
transport against loopback providers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from chat.agent.chunks import stream_completion
from chat.agent.replies import readable
from chat.turns.deps import configured_client


async def ask(client: Any) -> str:
    response = await stream_completion(client, {"model": "m", "messages": []})
    return "".join([chunk.content async for chunk in readable(response)])


def with_client[T](body: Callable[[Any], Awaitable[T]]) -> T:
    """`body`'s result with a fresh event loop's shared client, closed at the end."""

    async def run() -> T:
        client = configured_client()
        try:
            return await body(client)
        finally:
            await client.close()

    return asyncio.run(run())
