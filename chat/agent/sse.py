"""The model's streamed reply read straight from its HTTP response: each server-sent event's
data as the JSON the provider wrote, up to `[DONE]`.

It reads as the openai SDK's `AsyncStream` reads (openai 3.57: lines ended by CR, LF or
CRLF, `data:` lines of one event joined by newlines, an event dispatched at a blank line,
an `error` object in a chunk raised as `openai.APIError`, the body drained after `[DONE]` so
the connection is kept, transport failures raised as the SDK's), without its six layers of
generators and per-event objects around every chunk: under 300 turns in flight they cost
more CPU than recording the turn (py-spy; tests/chat/test_sse_reading.py pins the two
readers to the same results)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2

from chat.agent.faults import timed_out

DONE = b"[DONE]"
# After `[DONE]`, how long the rest of the body may take to arrive (the SDK's own wait).
DRAIN_SECONDS = 0.1
# Events already in hand (a burst from a fast provider or a buffering proxy, the demo model
# with no delay) are read without the loop turning: a reply lets it turn at least this often,
# so one long answer cannot hold other people's pages (bench/hostile_servers.py: an answer
# of 2,000 chunks held it 30 to 60 ms at a time).
TURN_SECONDS = 0.005


class _Lines:
    """A byte stream cut into lines at CR, LF or CRLF, a CRLF split between two reads
    included."""

    def __init__(self) -> None:
        self.rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        data = self.rest + data
        # A CR at the very end may be the first half of a CRLF: it waits for the next read.
        held = b"\r" if data.endswith(b"\r") else b""
        if held:
            data = data[:-1]
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        self.rest = lines.pop() + held
        return lines

    def finish(self) -> list[bytes]:
        """The line a CR ended at the very end of the body (a line left without its end
        ends no event: it is dropped, as the SDK drops it)."""
        return self.feed(b"\n") if self.rest.endswith(b"\r") else []


class _Events:
    """Lines gathered into events: each dispatched event's data (None when it had none)."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.fields = False  # any field besides comments since the last dispatch

    def line(self, line: bytes) -> bytes | None:
        """The data of the event this line ends, if it ends one that has fields."""
        if not line:
            if not self.fields:
                return None
            data, self.data, self.fields = b"\n".join(self.data), [], False
            return data
        if line[:1] == b":":
            return None
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self.data.append(value)
            self.fields = True
        elif name in (b"event", b"retry") or (name == b"id" and b"\0" not in value):
            # The chat stream has no use for them, but they make an event, as in the SDK.
            self.fields = True
        return None


async def stream_data(response: httpx2.Response) -> AsyncIterator[Any]:
    """Each event's data, parsed as JSON, until `[DONE]` or the body's end; the response is
    closed on the way out. Raises ValueError for data that is not JSON, openai.APIError for a
    chunk that says `error`, and the SDK's APITimeoutError and APIConnectionError for a
    stalled or broken connection."""
    import openai  # loaded already: the response came through its client

    lines, events = _Lines(), _Events()
    turned = time.monotonic()
    try:
        async for data in _body(response):
            for line in lines.feed(data):
                if (event := events.line(line)) is None:
                    continue
                if event.startswith(DONE):
                    await _drain(response)
                    return
                yield _chunk(response, event)
                if time.monotonic() - turned > TURN_SECONDS:
                    await asyncio.sleep(0)
                    turned = time.monotonic()
        for line in lines.finish():
            if (event := events.line(line)) is not None and not event.startswith(DONE):
                yield _chunk(response, event)
    except httpx2.TimeoutException as exc:
        if timed_out(exc):
            raise openai.APITimeoutError(request=response.request) from exc
        raise openai.APIConnectionError(request=response.request) from exc
    except (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream) as exc:
        # As the SDK maps them (openai._httpx2.request_exceptions).
        raise openai.APIConnectionError(request=response.request) from exc
    finally:
        await response.aclose()


def _body(response: httpx2.Response) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive: the transport's own stream when there is nothing to
    decode, without httpx's two generators and chunkers around each read (a streamed reply
    is a read per token). A compressed body goes through httpx's decoders, and one already
    read (a transport that built the response whole) or closed is httpx's to give or
    refuse."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    stream = response.stream
    if (
        encoding in ("", "identity")
        and not (response.is_stream_consumed or response.is_closed)
        and isinstance(stream, httpx2.AsyncByteStream)
    ):
        response.is_stream_consumed = True
        return aiter(stream)
    return response.aiter_bytes()


def _chunk(response: httpx2.Response, event: bytes) -> Any:
    data = json.loads(event)
    if isinstance(data, dict) and data.get("error"):
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else None
        if not message or not isinstance(message, str):
            message = "An error occurred during streaming"
        import openai

        raise openai.APIError(message=message, request=response.request, body=error)
    return data


async def _drain(response: httpx2.Response) -> None:
    """The rest of an HTTP/1.1 body, read so its connection can be used again."""
    if response.is_closed or response.http_version != "HTTP/1.1":
        return
    with contextlib.suppress(TimeoutError, httpx2.RequestError, httpx2.StreamConsumed):
        async with asyncio.timeout(DRAIN_SECONDS):
            # The transport's own stream, where the body's reading stopped (as the SDK does).
            async for _ in response.stream:  # type: ignore[union-attr]
                pass
