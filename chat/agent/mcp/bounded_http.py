"""Every HTTP response of an MCP server, read with the bounds of its stdio output.

mcp 2.3.0's Streamable HTTP transport reads a JSON body whole (`response.aread()`) and parses
it on the event loop: a 50 MB result grew the process by 249 MB and held the loop 0.5 s
(tests/chat/test_hostile_http_servers.py). Its SSE reader stops at 1 MB per event but reports
that as a lost connection, which ends the session; the legacy SSE transport raises on such
an event and ends its session too.

Installed as the first response hook of the transports' `httpx2.AsyncClient` (so requests
through a proxy, a redirect or an auth flow are bounded too), `bound` swaps the body's byte
stream for one that hands the SDK each JSON body, and each SSE event, whole and cleaned, up
to MESSAGE_LIMIT:

- a body or an event over it is not read further when it answers a request (a POST): its
  stream ends with a JSON-RPC error `OVERSIZED` for that request, so the call fails in words
  (chat.agent.mcp.tools) and the session goes on;
- on the session's own stream (the GET that carries a legacy SSE server's answers, or a
  Streamable HTTP server's notifications) an event over it is skipped as it streams, never
  kept, and the request it answered, read from its head, gets the same error: ending that
  stream would end the session;
- NULs, lone surrogates and bytes that are not UTF-8 are cleaned as over stdio, and counted;
- a compressed body is decompressed here, never to more than the bound.

What was dropped or cleaned is counted on the connection's `Traffic`."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx2

from chat.agent.mcp.stdio import (
    APART,
    ESCAPED_SURROGATE,
    HEAD,
    MESSAGE_LIMIT,
    NUL,
    OVERSIZED,
    PARSED_ASIDE,
    REQUEST_ID,
    STRUCTURED_DROPPED,
    STRUCTURED_LIMIT,
    Pace,
    Traffic,
    cleaned,
)

# The SDK's legacy SSE reader refuses an event over 1 MiB (httpx2's default, which its
# `sse_client` does not let a caller change), ending the session: its events are held to
# that, less room for the line breaks the SDK does not count.
LEGACY_EVENT_LIMIT = 1024 * 1024 - 1024
# How fast the middle of an event over the bound is read past on the session's own stream,
# after a first SKIPPED_AT_ONCE: the server's writes wait on the connection, and its result
# slows its own session, not the serving process (bench/hostile_servers.py).
SKIPPED_PER_SECOND = 16 * 1024 * 1024
SKIPPED_AT_ONCE = MESSAGE_LIMIT
# The codings httpx2 decodes without an optional package, as zlib windows: gzip, and
# deflate with a zlib header or without one (raw), as httpx2 takes it.
GZIP = 16 + zlib.MAX_WBITS
ZLIB_OR_GZIP = 32 + zlib.MAX_WBITS
RAW_DEFLATE = -zlib.MAX_WBITS


class Bounds:
    """The response hook of one connection's HTTP client."""

    def __init__(self, traffic: Traffic, *, limit: int = MESSAGE_LIMIT) -> None:
        self.traffic = traffic
        self.limit = limit

    async def __call__(self, response: httpx2.Response) -> None:
        bound(response, self.traffic, self.limit)


def bound(response: httpx2.Response, traffic: Traffic, limit: int = MESSAGE_LIMIT) -> None:
    """Replaces the response's body, before anyone reads it, with one read within `limit`."""
    stream: Any = response.stream
    declared = _declared_length(response)
    encodings = [
        coding.strip().lower()
        for coding in response.headers.get("content-encoding", "").split(",")
        if coding.strip() and coding.strip().lower() != "identity"
    ]
    if encodings:
        # Decoded here, or not at all (a coding Glassbox never asks for reaches the SDK as
        # it came, and fails to parse): httpx2's own decoders know no bound.
        stream = Decompressed(stream, encodings, limit)
        declared = None  # the compressed length says nothing of the body's
        del response.headers["content-encoding"]
    answering = _request_id(response.request)
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind == "text/event-stream":
        response.stream = Events(stream, answering, traffic, limit)
    else:
        response.stream = Body(stream, answering, declared, traffic, limit)


def _declared_length(response: httpx2.Response) -> int | None:
    try:
        return int(response.headers["content-length"])
    except (KeyError, ValueError):
        return None


def _request_id(request: httpx2.Request) -> Any:
    """The JSON-RPC id of the request this POST carries (None for a notification, an answer
    or a GET). The body is Glassbox's own, small and already in memory."""
    if request.method != "POST":
        return None
    try:
        sent = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    if isinstance(sent, dict) and "method" in sent and "id" in sent:
        return sent["id"]
    return None


def oversized_error(request_id: Any, size: int, limit: int, *, whole: bool) -> bytes:
    """The answer in place of one over `limit`; `whole` says whether `size` is all of it
    or only what was read before it was left."""
    error = {
        "code": OVERSIZED,
        "message": str(size),
        "data": {"bytes": size, "limit": limit, "whole": whole},
    }
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


def cleaned_json(body: bytes, traffic: Traffic) -> bytes:
    """The JSON text without NULs, lone surrogates or bytes that are not UTF-8 (each
    counted); untouched, and not parsed, when it holds none."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("utf-8", errors="replace")
        traffic.cleaned += text.count("\ufffd") - body.count("\ufffd".encode())
    else:
        if NUL not in body and not ESCAPED_SURROGATE.search(body):
            return body
    try:
        parsed = json.loads(text, strict=False)
    except ValueError:
        return text.encode()  # the SDK says it is not JSON-RPC
    return json.dumps(cleaned(parsed, traffic), ensure_ascii=False).encode()


async def _cleaned_json(body: bytes, traffic: Traffic) -> bytes:
    if len(body) > PARSED_ASIDE:
        # As over stdio: a large body is parsed in the process apart, which also leaves out
        # a structured result over its bound.
        try:
            reduced, count = await APART.reduced(body, STRUCTURED_DROPPED, STRUCTURED_LIMIT)
        except ValueError:
            return cleaned_json(body, traffic)  # not JSON: only its text is cleaned
        traffic.cleaned += count
        return reduced
    return cleaned_json(body, traffic)


class Decompressed(httpx2.AsyncByteStream):
    """A gzip or deflate body, decompressed to at most one byte over `limit` (the readers
    below then drop it): a small bomb never grows in memory. Other codings pass as they
    came."""

    def __init__(self, stream: Any, encodings: list[str], limit: int) -> None:
        self.stream = stream
        self.limit = limit
        known = [e for e in reversed(encodings) if e in ("gzip", "deflate")]
        self.raw_deflate = [e == "deflate" for e in known]
        self.decoders = [zlib.decompressobj(GZIP if e == "gzip" else ZLIB_OR_GZIP) for e in known]

    def _decompressed(self, index: int, chunk: bytes, left: int) -> bytes:
        try:
            return self.decoders[index].decompress(chunk, left)
        except zlib.error:
            if not self.raw_deflate[index]:
                raise
            # A deflate body without its zlib header, as some servers send it.
            self.raw_deflate[index] = False
            self.decoders[index] = zlib.decompressobj(RAW_DEFLATE)
            return self.decoders[index].decompress(chunk, left)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        left = self.limit + 1
        try:
            async for chunk in self.stream:
                for index in range(len(self.decoders)):
                    chunk = self._decompressed(index, chunk, left)
                    if index < len(self.raw_deflate):
                        self.raw_deflate[index] = False  # its header was read
                left -= len(chunk)
                yield chunk
                if left <= 0:
                    return
        except zlib.error:
            raise httpx2.DecodingError("the body is not what its encoding says") from None

    async def aclose(self) -> None:
        await self.stream.aclose()


class Body(httpx2.AsyncByteStream):
    """A body held whole up to `limit` and handed on at once, cleaned; one over it (by its
    length, or as it streams) is left unread and answered with `oversized_error`."""

    def __init__(
        self, stream: Any, answering: Any, declared: int | None, traffic: Traffic, limit: int
    ) -> None:
        self.stream = stream
        self.answering = answering
        self.declared = declared
        self.traffic = traffic
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts: list[bytes] = []
        size = 0
        if self.declared is None or self.declared <= self.limit:
            async for chunk in self.stream:
                size += len(chunk)
                if size > self.limit:
                    break
                parts.append(chunk)
            else:
                if parts:
                    yield await _cleaned_json(b"".join(parts), self.traffic)
                return
        parts = []
        await self.stream.aclose()
        whole = self.declared is not None
        size = self.declared if self.declared is not None else size
        self.traffic.oversized += 1
        self.traffic.oversized_bytes = size
        yield oversized_error(self.answering, size, self.limit, whole=whole)

    async def aclose(self) -> None:
        await self.stream.aclose()


def _pieces(chunk: bytes, newline: bool) -> list[tuple[bytes, bool]]:
    """The chunk cut after each event's end (a blank line), each piece with whether it ends
    one; `newline`: the text before it ended with a line break."""
    pieces = []
    start = 0
    if newline and chunk.startswith(b"\n"):
        pieces.append((b"\n", True))
        start = 1
    while (end := chunk.find(b"\n\n", start)) >= 0:
        pieces.append((chunk[start : end + 2], True))
        start = end + 2
    if start < len(chunk):
        pieces.append((chunk[start:], False))
    return pieces


class Events(httpx2.AsyncByteStream):
    """An event stream handed on one whole event at a time (line breaks made `\\n`, as the
    SDK's reader makes them), each up to `limit`.

    A stream that answers one request ends at an event over the limit, with the error for
    that request; the session's own stream skips such an event to its end and answers the
    request named in its head, if any."""

    def __init__(self, stream: Any, answering: Any, traffic: Traffic, limit: int) -> None:
        self.stream = stream
        self.answering = answering
        self.traffic = traffic
        self.limit = limit
        # The event being read: its pieces (none kept once it is over), size and head.
        self.parts: list[bytes] = []
        self.size = 0
        self.head = b""
        self.over = False
        self.skipping = Pace(SKIPPED_PER_SECOND, SKIPPED_AT_ONCE)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        carriage = False  # the last chunk ended with \r: a \n opening the next is its pair
        newline = False  # the text so far ends with a line break (not an event's end)
        async for raw in self.stream:
            # As over stdio (chat.agent.mcp.stdio._lines): a read of what has arrived does
            # not wait, and a stream that never pauses would hold the event loop.
            await anyio.lowlevel.checkpoint()
            if self.over and b"\n" not in raw and b"\r" not in raw:
                # The middle of an event being skipped: only counted (its head is kept).
                self.size += len(raw)
                carriage = newline = False
                if wait := self.skipping.wait(len(raw)):
                    await anyio.sleep(wait)
                continue
            if carriage and raw.startswith(b"\n"):
                raw = raw[1:]
            if not raw:
                continue
            carriage = raw.endswith(b"\r")
            chunk = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            pieces = _pieces(chunk, newline)
            last, ended = pieces[-1]
            newline = not ended and last.endswith(b"\n")
            for piece, ends in pieces:
                self._add(piece)
                if self.over and self.answering is not None:
                    # Not read further: this request's answer is the error.
                    await self.stream.aclose()
                    yield self._error(whole=ends) or b""
                    return
                if ends:
                    event = self._error(whole=True) if self.over else await self._whole()
                    self.parts, self.size, self.head, self.over = [], 0, b"", False
                    if event is not None:
                        yield event
        if self.parts and not self.over:
            yield await self._whole()  # a last event without its blank line

    def _add(self, piece: bytes) -> None:
        if len(self.head) < HEAD:
            self.head += piece[: HEAD - len(self.head)]
        self.size += len(piece)
        if self.size > self.limit:
            self.over = True
            self.parts = []
        elif not self.over:
            self.parts.append(piece)

    def _error(self, *, whole: bool) -> bytes | None:
        self.traffic.oversized += 1
        self.traffic.oversized_bytes = self.size
        request_id = self.answering
        if request_id is None:
            found = REQUEST_ID.search(self.head)
            if found is None:
                return None  # a notification, or an id past the head: only counted
            request_id = json.loads(found.group(1))
        error = oversized_error(request_id, self.size, self.limit, whole=whole)
        return b"event: message\ndata: " + error + b"\n\n"

    async def _whole(self) -> bytes:
        """The event read, its data cleaned as a JSON body is if it needs it."""
        event = b"".join(self.parts)
        if NUL not in event and not ESCAPED_SURROGATE.search(event):
            try:
                event.decode("utf-8")
                return event
            except UnicodeDecodeError:
                pass
        lines = event.rstrip(b"\n").split(b"\n")
        data = [line for line in lines if line.startswith(b"data:")]
        if not data:
            return event
        joined = b"\n".join(line.removeprefix(b"data:").removeprefix(b" ") for line in data)
        body = await _cleaned_json(joined, self.traffic)
        kept = [line for line in lines if not line.startswith(b"data:")]
        return b"\n".join([*kept, b"data: " + body]) + b"\n\n"

    async def aclose(self) -> None:
        await self.stream.aclose()
