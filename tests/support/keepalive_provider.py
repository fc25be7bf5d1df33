"""An OpenAI-compatible provider on a loopback port that keeps its HTTP/1.1 connections
open, counts them, and holds every answer until `hold` requests wait at once (a burst, with
no timing involved)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from chat.agent.demo_wire import chunk

ANSWER = (
    b"".join(
        f"data: {json.dumps(chunk(dict(delta), created=0))}\n\n".encode()
        for delta in ({"content": "Hello"}, {"finish_reason": "stop"})
    )
    + b"data: [DONE]\n\n"
)


@dataclass
class KeepAliveProvider:
    url: str = ""
    hold: int = 1
    connections: int = 0
    waiting: int = 0
    burst: asyncio.Event = field(default_factory=asyncio.Event)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                )
                await reader.readexactly(length)
                self.waiting += 1
                if self.waiting >= self.hold:
                    self.burst.set()
                await self.burst.wait()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    + f"content-length: {len(ANSWER)}\r\n\r\n".encode()
                    + ANSWER
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def next_burst(self, hold: int) -> None:
        self.hold, self.waiting = hold, 0
        self.burst.clear()


@asynccontextmanager
async def keepalive_provider() -> AsyncIterator[KeepAliveProvider]:
    provider = KeepAliveProvider()
    server = await asyncio.start_server(provider.serve, "127.0.0.1", 0)
    provider.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    async with server:
        yield provider
