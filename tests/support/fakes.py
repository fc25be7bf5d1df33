"""A scripted OpenAI-compatible server behind the real openai client: each request gets the
next scripted response, streamed in OpenAI's wire format by the demo model's SSE writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
from openai import AsyncOpenAI

from chat.agent.demo_wire import SSEStream


def text_response(text: str, size: int = 5) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": text[i : i + size]} for i in range(0, len(text), size)]
    return [*deltas, {"finish_reason": "stop"}]


def tool_call_response(*calls: tuple[str, str, str], size: int = 1) -> list[dict[str, Any]]:
    """calls: (call_id, name, raw arguments); arguments arrive `size` characters a chunk, and
    parallel calls interleave chunk by chunk, as real providers send them."""
    deltas: list[dict[str, Any]] = []
    for index, (call_id, name, _) in enumerate(calls):
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
    pieces = [[raw[i : i + size] for i in range(0, len(raw), size)] for _, _, raw in calls]
    for step in range(max(len(p) for p in pieces)):
        for index, chunks in enumerate(pieces):
            if step < len(chunks):
                deltas.append(
                    {"tool_calls": [{"index": index, "function": {"arguments": chunks[step]}}]}
                )
    return [*deltas, {"finish_reason": "tool_calls"}]


class CountingStream(SSEStream):
    """Counts the chunks it has put on the wire, so a test can tell what had arrived when."""

    def __init__(self, deltas: list[dict[str, Any]]) -> None:
        super().__init__(deltas, 0)
        self.sent = 0

    async def __aiter__(self):
        async for data in super().__aiter__():
            self.sent += 1
            yield data


class ScriptedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, responses: list[list[dict[str, Any]]]) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []
        self.streams: list[CountingStream] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(await request.aread()))
        stream = CountingStream(self.responses.pop(0))
        self.streams.append(stream)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)


def scripted_client(transport: httpx2.AsyncBaseTransport) -> AsyncOpenAI:
    return AsyncOpenAI(
        api_key="test",
        base_url="http://scripted.invalid/v1",
        http_client=httpx2.AsyncClient(transport=transport),
        max_retries=0,
    )


FIXTURES = Path(__file__).resolve().parents[1] / "chat" / "fixtures"


class RecordedStream(httpx2.AsyncByteStream):
    """Replays a stream recorded in OpenAI's exact wire format, cut at arbitrary byte
    boundaries (mid-line and mid-character), as a network delivers it."""

    def __init__(self, data: bytes, size: int = 7) -> None:
        self.data = data
        self.size = size

    async def __aiter__(self):
        for i in range(0, len(self.data), self.size):
            yield self.data[i : i + self.size]


class RecordedProvider(httpx2.AsyncBaseTransport):
    def __init__(self, *names: str) -> None:
        self.files = [FIXTURES / name for name in names]
        self.requests: list[dict] = []

    async def handle_async_request(self, request):
        self.requests.append(json.loads(await request.aread()))
        stream = RecordedStream(self.files.pop(0).read_bytes())
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)
