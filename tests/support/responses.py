"""A streamed response as a client reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator

from django.http import HttpResponseBase, StreamingHttpResponse


async def streamed(response: HttpResponseBase) -> list[bytes]:
    """The parts of a response streamed by an async generator, as Daphne sends them (a sync
    iterator it would buffer whole)."""
    assert isinstance(response, StreamingHttpResponse), f"{response!r} is not streamed"
    content = response.streaming_content
    assert isinstance(content, AsyncIterator), "the response streams from a sync iterator"
    return [part async for part in content]
