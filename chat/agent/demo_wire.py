"""The demo model on the wire: its deltas as OpenAI's streamed chunks (or one completion),
the httpx transport the openai client is given, and the gate that holds a stream where a
test wants it (no timing involved)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from chat.agent.demo import MODEL, DemoModel


def chunk(delta: dict[str, Any], created: int) -> dict[str, Any]:
    if "usage" in delta:  # the last chunk when usage was asked for: no choices
        return {
            "id": "chatcmpl-glassbox-demo",
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL,
            "choices": [],
            "usage": delta["usage"],
        }
    finish_reason = delta.pop("finish_reason", None)
    return {
        "id": "chatcmpl-glassbox-demo",
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


class Gate:
    """Holds the demo model's `request`-th response after `after` chunks until it is opened:
    a test pauses a turn mid-stream, does what it needs, and lets it go on, with no timing
    involved. Installed with `install_gate`."""

    def __init__(self, after: int, request: int = 1) -> None:
        self.after = after
        self.request = request
        self.requests = 0
        self.reached = asyncio.Event()
        self.opened = asyncio.Event()

    def pause_at(self) -> int | None:
        """Called once per request: where its stream holds, if it is the one gated."""
        self.requests += 1
        return self.after if self.requests == self.request else None

    async def hold(self) -> None:
        self.reached.set()
        await self.opened.wait()

    def open(self) -> None:
        self.opened.set()


_gate: Gate | None = None


def install_gate(gate: Gate | None) -> None:
    global _gate
    _gate = gate


class SSEStream(httpx2.AsyncByteStream):
    """The chunks as a network body gives them: once. A reader that comes back after
    `[DONE]` (as the SDK's and chat.agent.sse's do, to keep the connection) reads on from
    where it stopped, not the whole reply again."""

    def __init__(
        self, deltas: list[dict[str, Any]], delay: float, gate: Gate | None = None
    ) -> None:
        self.deltas = deltas
        self.delay = delay
        self.gate = gate
        self.pause_at = gate.pause_at() if gate else None
        self.body: AsyncIterator[bytes] | None = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        if self.body is None:
            self.body = self._events()
        return self.body

    async def _events(self) -> AsyncIterator[bytes]:
        for index, delta in enumerate(self.deltas):
            if self.gate is not None and index == self.pause_at:
                await self.gate.hold()
            if self.delay:
                await asyncio.sleep(self.delay)
            data = json.dumps(chunk(dict(delta), created=0), ensure_ascii=False)
            yield f"data: {data}\n\n".encode()
        yield b"data: [DONE]\n\n"


class DemoTransport(httpx2.AsyncBaseTransport):
    def __init__(self, delay: float = 0.0, model: DemoModel | None = None) -> None:
        self.delay = delay
        self.model = model or DemoModel()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return httpx2.Response(
                404, json={"error": {"message": "The demo model only serves chat completions."}}
            )
        body = json.loads(await request.aread())
        deltas = await self.model.respond(body)
        if not body.get("stream"):
            return httpx2.Response(200, json=_completion(deltas))
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=SSEStream(deltas, self.delay, _gate),
        )


def _completion(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    text = "".join(d.get("content") or "" for d in deltas)
    return {
        "id": "chatcmpl-glassbox-demo",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }
