"""Large JSON from MCP servers is parsed in a process apart (project.parsed_apart): what
comes back is the same message, cleaned, its oversized structured result left out with its
size; what is not JSON says so; a worker that died is replaced, and the message is still
read."""

from __future__ import annotations

import json
import os

import pytest

from project.parsed_apart import Apart, reduced

pytestmark = pytest.mark.asyncio

MARKER = "glassbox.dropped.test"


@pytest.fixture
def apart():
    worker = Apart()
    yield worker
    worker.close()


def result(structured: object, text: str = "hello") -> bytes:
    body = {"content": [{"type": "text", "text": text}], "structuredContent": structured}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": body}).encode()


async def test_the_worker_reads_a_message_as_this_process_would_in_a_process_of_its_own(apart):
    line = result({"items": list(range(10))}, text="x" * 300_000)
    body, count = await apart.reduced(line, MARKER, 1000)
    assert apart.process is not None and apart.process.pid != os.getpid()
    assert (body, count) == reduced(line, MARKER, 1000)
    assert json.loads(body) == json.loads(line) and count == 0


async def test_a_structured_result_over_its_bound_is_left_out_with_its_size(apart):
    items = {"items": [{"n": n} for n in range(1000)]}
    body, _ = await apart.reduced(result(items), MARKER, 1000)
    kept = json.loads(body)["result"]
    size = len(json.dumps(items, separators=(",", ":")))
    assert kept["structuredContent"] == {MARKER: size} and kept["content"][0]["text"] == "hello"


async def test_nuls_lone_surrogates_and_bytes_not_utf8_are_cleaned_and_counted(apart):
    line = result({"a": "\x00b\ud800"}, text="ok").replace(b"ok", b"o\xffk")
    body, count = await apart.reduced(line, MARKER, 1000)
    message = json.loads(body)["result"]
    assert message["structuredContent"] == {"a": "b\ufffd"} and count == 3
    assert message["content"][0]["text"] == "o\ufffdk"


async def test_what_is_not_json_raises_and_the_worker_goes_on(apart):
    with pytest.raises(ValueError):
        await apart.reduced(b'{"jsonrpc": "2.0", "id": 1, "result": ', MARKER, 1000)
    body, _ = await apart.reduced(result(None), MARKER, 1000)
    assert json.loads(body)["id"] == 7


async def test_a_worker_that_died_is_replaced_and_the_message_still_read(apart):
    await apart.reduced(result(1), MARKER, 1000)
    assert apart.process is not None
    first = apart.process.pid
    apart.process.kill()
    apart.process.wait()
    body, _ = await apart.reduced(result(2), MARKER, 1000)
    assert json.loads(body)["result"]["structuredContent"] == 2
    assert apart.process is not None and apart.process.pid != first
