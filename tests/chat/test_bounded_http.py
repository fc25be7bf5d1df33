"""The bounded reading of MCP servers' HTTP answers (chat.agent.mcp.bounded_http), byte by
byte: event streams cut at every boundary read as httpx2's own SSE parser reads them whole,
an answer over the bound is left unread, and a compressed bomb never grows in memory (a
real local HTTP server answers over a socket)."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import httpx2
import pytest

from chat.agent.mcp.bounded_http import Bounds, Events
from chat.agent.mcp.stdio import OVERSIZED, Traffic
from tests.support.resident import PeakGrowth

pytestmark = pytest.mark.asyncio

# Three events with each kind of line break, a comment and a multi-line data field.
STREAM = (
    b'event: message\r\ndata: {"jsonrpc":"2.0","method":"a"}\r\n\r\n'
    b": ping\r\r"
    b'id: 7\ndata: {"jsonrpc":"2.0",\ndata: "id":1,"result":{}}\n\n'
    b'data: {"jsonrpc":"2.0","id":2,"result":{"text":"caf\xc3\xa9"}}\r\n\r\n'
)


class Chunks(httpx2.AsyncByteStream):
    """A body arriving in these chunks; counts how many were asked for."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.read = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            if self.closed:
                return
            self.read += 1
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


async def parsed(stream: httpx2.AsyncByteStream) -> list[httpx2.ServerSentEvent]:
    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=stream,
        request=httpx2.Request("GET", "http://server.test/mcp"),
    )
    return [event async for event in httpx2.EventSource(response)]


def cuts(data: bytes) -> Iterator[list[bytes]]:
    for at in range(1, len(data)):
        yield [data[:at], data[at:]]
    yield [data[n : n + 1] for n in range(len(data))]


async def test_an_event_stream_cut_anywhere_reads_as_it_does_whole():
    whole = await parsed(Chunks([STREAM]))
    assert [e.data for e in whole][-1] == '{"jsonrpc":"2.0","id":2,"result":{"text":"café"}}'
    for chunks in cuts(STREAM):
        traffic = Traffic()
        assert await parsed(Events(Chunks(chunks), None, traffic, limit=1000)) == whole, chunks
        assert traffic == Traffic()


async def test_an_event_over_the_bound_that_answers_a_request_is_not_read_further():
    big = b'data: {"jsonrpc":"2.0","id":5,"result":"' + b"x" * 10_000 + b'"}\n\n'
    source = Chunks([b": ping\n\n"] + [big[n : n + 100] for n in range(0, len(big), 100)])
    traffic = Traffic()

    (answer,) = await parsed(Events(source, 5, traffic, limit=1000))

    assert json.loads(answer.data) == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {
            "code": OVERSIZED,
            "message": "1100",
            "data": {"bytes": 1100, "limit": 1000, "whole": False},
        },
    }
    assert source.closed and source.read == 12  # the ping, and 1,100 bytes of the event
    assert traffic.oversized == 1


async def test_the_sessions_own_stream_skips_an_event_over_the_bound_and_goes_on():
    big = b'data: {"jsonrpc":"2.0","id":"c-9","result":"' + b"x" * 10_000 + b'"}\n\n'
    after = b'data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'
    chunks = [big[n : n + 100] for n in range(0, len(big), 100)] + [after]
    traffic = Traffic()

    answer, notification = await parsed(Events(Chunks(chunks), None, traffic, limit=1000))

    error = json.loads(answer.data)
    assert error["id"] == "c-9"
    assert error["error"]["data"] == {"bytes": len(big), "limit": 1000, "whole": True}
    assert notification.data == after[6:-2].decode()
    assert traffic.oversized == 1


async def test_a_skipped_event_ends_where_its_blank_line_does_wherever_the_chunks_cut_it():
    big = b'data: {"jsonrpc":"2.0","id":4,"result":"' + b"x" * 3_000 + b'"}\r\n\r\n'
    after = b'data: {"jsonrpc":"2.0","method":"notifications/progress"}\r\n\r\n'
    stream = big + after
    for size in (7, 64, 1_000):
        for offset in range(size):
            chunks = [stream[:offset]] if offset else []
            chunks += [stream[n : n + size] for n in range(offset, len(stream), size)]
            traffic = Traffic()

            answer, notification = await parsed(Events(Chunks(chunks), None, traffic, 1000))

            assert json.loads(answer.data)["error"]["data"]["bytes"] == len(big) - 2, chunks
            assert notification.data == '{"jsonrpc":"2.0","method":"notifications/progress"}'
            assert traffic.oversized == 1


@contextmanager
def answering(body: bytes, headers: dict[str, str]) -> Iterator[str]:
    """A local HTTP server that answers every POST with this body."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


async def post(url: str, traffic: Traffic) -> dict:
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "big"}}
    async with httpx2.AsyncClient(event_hooks={"response": [Bounds(traffic)]}) as client:
        return (await client.post(url, json=request)).json()


async def test_a_compressed_bomb_is_never_decompressed_past_the_bound():
    bomb = gzip.compress(b'{"jsonrpc":"2.0","id":3,"result":"' + b"0" * 100_000_000, 1)
    traffic = Traffic()
    said = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    with answering(bomb, said) as url, PeakGrowth() as growth:
        answer = await post(url, traffic)

    assert answer["id"] == 3 and answer["error"]["code"] == OVERSIZED
    assert answer["error"]["data"]["whole"] is False
    assert growth.megabytes < 20, f"grew {growth.megabytes:.0f} MB"


async def test_a_json_body_that_says_it_is_too_long_is_not_read_and_a_small_one_is_cleaned():
    traffic = Traffic()
    huge = b"x" * (5 * 1024 * 1024)
    said = {"Content-Type": "application/json", "Content-Length": str(len(huge))}
    with answering(huge, said) as url:
        answer = await post(url, traffic)
    assert answer["error"]["data"] == {"bytes": len(huge), "limit": 4 * 1024 * 1024, "whole": True}

    dirty = b'{"jsonrpc":"2.0","id":3,"result":{"text":"a\\u0000b \\udc00 \xff"}}'
    with answering(dirty, {"Content-Type": "application/json"}) as url:
        answer = await post(url, traffic)
    assert answer["result"]["text"] == "ab \ufffd \ufffd"
    assert traffic.cleaned == 3
