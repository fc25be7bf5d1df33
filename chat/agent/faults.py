"""The model provider's connection faults named as httpx's own transport names them.

The openai SDK's aiohttp transport turns every aiohttp connection error into
`httpx2.ConnectTimeout`, so a provider that refused the connection, or cut it before or while
answering, would be said to be slow ("did not answer in time") at once, with no time having
passed. Only a real timeout (aiohttp's are `TimeoutError`s) stays one."""

from __future__ import annotations

import httpx2


def timed_out(exc: httpx2.TimeoutException) -> bool:
    """Whether time really ran out: aiohttp's own timeouts are TimeoutErrors."""
    cause = exc.__cause__
    return (
        not isinstance(exc, httpx2.ConnectTimeout)
        or cause is None
        or isinstance(cause, TimeoutError)
    )


class NamedFaults(httpx2.AsyncBaseTransport):
    """A transport whose request raises a connection error, not a timeout, for a connection
    that failed without any time passing (its body's reading: chat.agent.sse)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self.inner.handle_async_request(request)
        except httpx2.TimeoutException as exc:
            if timed_out(exc):
                raise
            raise httpx2.ConnectError(str(exc), request=request) from exc.__cause__

    async def aclose(self) -> None:
        await self.inner.aclose()
