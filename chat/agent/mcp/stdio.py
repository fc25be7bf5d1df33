"""A stdio server's session that knows when the process is gone: the SDK's stdio transport
ends its read stream when the server exits, and says nothing else; this reads that end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client


class EndWatched:
    """The transport's read stream (the SDK's `ReadStream` protocol), calling `on_end` once
    when it ends: the process exited, or the session was closed."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self.stream = stream
        self.on_end: Callable[[], None] | None = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self.stream, "last_context", None)

    def _ended(self) -> None:
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            on_end()

    async def receive(self) -> Any:
        try:
            return await self.stream.receive()
        except Exception:
            self._ended()
            raise

    async def aclose(self) -> None:
        await self.stream.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.stream.__anext__()
        except (StopAsyncIteration, Exception):
            self._ended()
            raise

    async def __aenter__(self) -> Self:
        await self.stream.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self.stream.__aexit__(exc_type, exc_val, exc_tb)


@asynccontextmanager
async def watched_stdio(
    params: StdioServerParameters, on_exit: Callable[[], None]
) -> AsyncIterator[tuple[EndWatched, Any]]:
    """The SDK's stdio transport, whose read stream says when the server's output ends."""
    async with stdio_client(params) as (read, write):
        yield EndWatched(read, on_exit), write
