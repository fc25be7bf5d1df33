"""The model's stream is read by Glassbox's own reader (chat.agent.sse), not the openai SDK's
`AsyncStream`: both give the same chunks, the same errors, and leave the connection the same,
for recorded providers' replies and for every way the SSE format may cut its lines, with the
bytes arriving in pieces of any size."""

from __future__ import annotations

import asyncio
import gzip
import time
import zlib
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, AsyncStream

from chat.agent.sse import stream_data
from tests.support.stalls import Ticker

FIXTURES = Path(__file__).parent / "fixtures"

EDGES = {
    "crlf": b'data: {"a": 1}\r\n\r\ndata: {"a": 2}\r\n\r\ndata: [DONE]\r\n\r\n',
    "cr alone": b'data: {"a": 1}\r\rdata: {"a": 2}\r\r',
    "ends on a cr": b'data: {"a": 1}\r\r',
    "comments and fields": (
        b': keep-alive\n\nevent: message\nid: 7\nretry: 100\ndata: {"a": 1}\n\n'
        b"id: only\n\n"
        b'data:{"no": "space"}\n\n'
    ),
    "data over two lines": b'data: {"a":\ndata: 1}\n\n',
    "the last event without its blank line": b'data: {"a": 1}\n\ndata: {"a": 2}\n',
    "after done nothing is read": b'data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"a": 2}\n\n',
    "an empty event is no json": b'data: {"a": 1}\n\nevent: ping\n\n',
    "error in the stream": b'data: {"a": 1}\n\ndata: {"error": {"message": "overloaded"}}\n\n',
    "error without words": b'data: {"error": {"code": 1}}\n\n',
    "not json": b'data: {"a": 1}\n\ndata: {"a"\n\n',
    "not utf-8": b'data: {"a": "\xff"}\n\n',
}


class Pieces(httpx2.AsyncByteStream):
    def __init__(self, body: bytes, size: int) -> None:
        self.body, self.size = body, size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.body), self.size):
            yield self.body[start : start + self.size]


def response(body: bytes, size: int, encoding: str | None = None) -> httpx2.Response:
    request = httpx2.Request("POST", "http://provider.invalid/v1/chat/completions")
    headers = {"content-type": "text/event-stream"}
    if encoding is not None:
        headers["content-encoding"] = encoding
    return httpx2.Response(200, headers=headers, stream=Pieces(body, size), request=request)


# What a reader gave, and how it ended.
Reading = tuple[list[object], str]


async def read(reader: AsyncIterator[object]) -> Reading:
    """What a reader gives, and how it ended: the provider's error in its words, or the kind
    of data that could not be read."""
    chunks: list[object] = []
    try:
        async for chunk in reader:
            chunks.append(chunk)
    except openai.APIError as problem:
        return chunks, f"{type(problem).__name__}: {problem} {problem.body!r}"
    except ValueError as problem:
        return chunks, type(problem).__name__
    return chunks, "end"


def compare(
    body: bytes, sizes: Iterable[int], encoding: str | None = None
) -> dict[int, tuple[Reading, Reading]]:
    """For each size of the pieces the body arrives in: what the SDK reads, what we read."""

    async def both() -> dict[int, tuple[Reading, Reading]]:
        client = AsyncOpenAI(api_key="test", base_url="http://provider.invalid/v1")
        read_by = {}
        for size in sizes:
            sdk = AsyncStream(
                cast_to=object, response=response(body, size, encoding), client=client
            )
            ours = stream_data(response(body, size, encoding))
            read_by[size] = (await read(aiter(sdk)), await read(ours))
        return read_by

    return asyncio.run(both())


@pytest.mark.parametrize("name", sorted(EDGES))
def test_each_way_of_cutting_lines_reads_as_the_sdk_reads_it_in_pieces_of_any_size(name):
    body = EDGES[name]
    for size, (sdk, ours) in compare(body, range(1, len(body) + 1)).items():
        assert ours == sdk, f"{name!r} in pieces of {size} bytes"


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.sse")))
def test_a_recorded_providers_reply_reads_as_the_sdk_reads_it(fixture):
    body = (FIXTURES / fixture).read_bytes()
    for size, (sdk, ours) in compare(body, (3, 7, 64, len(body))).items():
        assert ours == sdk, f"{fixture} in pieces of {size} bytes"
        assert ours[1] == "end" and ours[0], fixture


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compressed_reply_is_decoded_as_the_sdk_decodes_it(encoding):
    # Most replies are read straight from the transport; one a proxy compressed is not.
    body = (FIXTURES / sorted(p.name for p in FIXTURES.glob("*.sse"))[0]).read_bytes()
    packed = gzip.compress(body) if encoding == "gzip" else zlib.compress(body)
    for size, (sdk, ours) in compare(packed, (5, 64, len(packed)), encoding).items():
        assert ours == sdk, f"{encoding} in pieces of {size} bytes"
        assert ours[1] == "end" and len(ours[0]) > 2, encoding


def test_a_reply_a_transport_built_whole_reads_as_the_sdk_reads_it():
    body = b'data: {"a": 1}\n\ndata: {"a": 2}\n\ndata: [DONE]\n\n'

    async def both() -> tuple[Reading, Reading]:
        def whole() -> httpx2.Response:
            request = httpx2.Request("POST", "http://provider.invalid/v1/chat/completions")
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, content=body, request=request)

        client = AsyncOpenAI(api_key="test", base_url="http://provider.invalid/v1")
        sdk = AsyncStream(cast_to=object, response=whole(), client=client)
        return await read(aiter(sdk)), await read(stream_data(whole()))

    sdk, ours = asyncio.run(both())
    assert ours == sdk and ours[1] == "end" and len(ours[0]) == 2


def test_a_stall_is_the_sdks_timeout_and_a_cut_its_connection_error():
    class Failing(httpx2.AsyncByteStream):
        def __init__(self, error: Exception) -> None:
            self.error = error

        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b'data: {"a": 1}\n\n'
            raise self.error

    async def failure(error: Exception) -> tuple[list[object], type[BaseException]]:
        got = response(b"", 1)
        got.stream = Failing(error)
        chunks: list[object] = []
        with pytest.raises(openai.APIError) as raised:
            async for chunk in stream_data(got):
                chunks.append(chunk)
        assert got.is_closed
        return chunks, type(raised.value)

    assert asyncio.run(failure(httpx2.ReadTimeout("slow"))) == ([{"a": 1}], openai.APITimeoutError)
    assert asyncio.run(failure(httpx2.ReadError("reset"))) == (
        [{"a": 1}],
        openai.APIConnectionError,
    )


def test_a_long_reply_that_arrives_at_once_lets_other_work_run_while_it_is_read():
    # A long answer already in hand, as a fast provider or a proxy that buffers delivers
    # it: without a pause the loop would not turn until its last chunk was read.
    event = b'data: {"choices": [{"index": 0, "delta": {"content": "word"}}]}\n\n'
    body = event * 100_000 + b"data: [DONE]\n\n"

    async def reading() -> tuple[int, float, float]:
        count = 0
        async with Ticker(every=0.001) as ticks:
            await asyncio.sleep(0.01)  # the ticker has begun
            began = time.perf_counter()
            async for _chunk in stream_data(response(body, 64 * 1024)):
                count += 1
            took = time.perf_counter() - began
            await asyncio.sleep(0.01)  # and sees the gap, if the read held the loop
        return count, took, ticks.longest

    count, took, longest = asyncio.run(reading())
    assert count == 100_000
    assert longest < took / 4, f"the loop waited {longest:.3f} s of the {took:.3f} s"
