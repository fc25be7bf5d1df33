"""A 2026-07-28 result without `resultType` is read as "complete", as the protocol says a
client must (SEP-2322). mcp 2.3.0's session checks each result against that revision's
models, which require the field, and the call would end in a validation error instead.

The default is filled in at the transport, before the session reads the result, and only for
answers to requests sent in that revision (stamped with it in their `_meta`): an older
session's results, and what a server sends of its own accord, pass as they came."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.client._transport import Transport, TransportStreams
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# Requests still waiting for their answer, by id. A request whose answer never comes (the
# call was abandoned) stays noted: past this many the oldest are forgotten.
NOTED_LIMIT = 10_000


@asynccontextmanager
async def complete_by_default(transport: Transport) -> AsyncIterator[TransportStreams]:
    async with transport as (read, write):
        noted: dict[types.RequestId, None] = {}
        yield _Reading(read, noted), _Noting(write, noted)


def _modern(message: types.JSONRPCRequest) -> bool:
    meta = (message.params or {}).get("_meta")
    return isinstance(meta, dict) and (
        meta.get(types.PROTOCOL_VERSION_META_KEY) in MODERN_PROTOCOL_VERSIONS
    )


class _Noting:
    """The write stream (the SDK's `WriteStream`), noting the ids of modern requests."""

    def __init__(self, stream: Any, noted: dict[types.RequestId, None]) -> None:
        self.stream = stream
        self.noted = noted

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and _modern(message):
            self.noted[message.id] = None
            if len(self.noted) > NOTED_LIMIT:
                del self.noted[next(iter(self.noted))]
        await self.stream.send(item)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> _Noting:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.stream.__aexit__(*exc)


class _Reading:
    """The read stream (the SDK's `ReadStream`), completing the results of noted requests."""

    def __init__(self, stream: Any, noted: dict[types.RequestId, None]) -> None:
        self.stream = stream
        self.noted = noted

    @property
    def last_context(self) -> Any:
        return getattr(self.stream, "last_context", None)

    def _read(self, item: Any) -> Any:
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            answered = message.id
            if answered is not None and answered in self.noted:
                del self.noted[answered]
                if isinstance(message, types.JSONRPCResponse):
                    message.result.setdefault("resultType", "complete")
        return item

    async def receive(self) -> Any:
        return self._read(await self.stream.receive())

    async def aclose(self) -> None:
        await self.stream.aclose()

    def __aiter__(self) -> _Reading:
        return self

    async def __anext__(self) -> Any:
        return self._read(await self.stream.__anext__())

    async def __aenter__(self) -> _Reading:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.stream.__aexit__(*exc)
