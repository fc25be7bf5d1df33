"""A paced, OpenAI-compatible chat-completions server for benchmarks, run as its own process.

Each request streams, in OpenAI's wire format: after TTFT, a tool call (its name first, then its
arguments in small chunks), or, when the conversation already holds a tool result, N text
tokens at a given rate. The tool call's id carries the CLOCK_MONOTONIC time the name was sent,
so a client on the same machine measures how long the status line took to reach it.

    python bench/fake_llm.py --port 9100 --ttft 0.05 --tokens 200 --rate 100 --chunk 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

ARGUMENTS = json.dumps({"feedback_to_user": "Looking up salary negotiation", "query": "salary"})
# With --flood-tool, a question that says "flood" calls that MCP tool (bench/mcp_server.py).
FLOOD_ARGUMENTS = json.dumps({"feedback_to_user": "Flooding", "count": 1000, "seconds": 2})


def chunk(delta: dict, finish: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    payload = f"data: {json.dumps(data)}\n\n".encode()
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


async def serve(reader, writer, options) -> None:
    """Requests answered one after another on one connection, as its `keep-alive` says, until
    the client closes it."""
    try:
        while True:
            await respond(reader, writer, options)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def respond(reader, writer, options) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    body = json.loads(await reader.readexactly(length))
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
    )
    await asyncio.sleep(options.ttft)
    answered = body["messages"][-1]["role"] == "tool" or not body.get("tools")
    if answered or options.direct:
        writer.write(chunk({"role": "assistant", "content": ""}))
        pause = 1 / options.rate if options.rate else 0
        for n in range(options.tokens):
            writer.write(chunk({"content": f"w{n % 10}{' ' * (options.chunk - 2)}"}))
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
        writer.write(chunk({}, "stop"))
    else:
        call_id = f"call_{time.monotonic_ns()}"
        tool, arguments = "search_documents", ARGUMENTS
        if options.flood_tool and "flood" in str(body["messages"][-1].get("content")):
            tool, arguments = options.flood_tool, FLOOD_ARGUMENTS
        name = {"index": 0, "id": call_id, "type": "function",
                "function": {"name": tool, "arguments": ""}}  # fmt: skip
        writer.write(chunk({"role": "assistant", "content": None, "tool_calls": [name]}))
        await writer.drain()
        for i in range(0, len(arguments), options.arg_chunk):
            piece = arguments[i : i + options.arg_chunk]
            writer.write(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
            await writer.drain()
            await asyncio.sleep(options.arg_pause)
        writer.write(chunk({}, "tool_calls"))
    payload = b"data: [DONE]\n\n"
    writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n")
    await writer.drain()


async def main(options) -> None:
    server = await asyncio.start_server(
        lambda r, w: serve(r, w, options), "127.0.0.1", options.port, backlog=2048
    )
    print(f"fake LLM on 127.0.0.1:{options.port}", flush=True)
    async with server:
        await server.serve_forever()


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--ttft", type=float, default=0.05, help="seconds to the first byte")
    parser.add_argument("--tokens", type=int, default=200, help="answer tokens")
    parser.add_argument("--rate", type=float, default=100, help="tokens a second (0: no pause)")
    parser.add_argument("--chunk", type=int, default=4, help="characters a token")
    parser.add_argument("--arg-chunk", type=int, default=6, help="argument characters a chunk")
    parser.add_argument("--arg-pause", type=float, default=0.005)
    parser.add_argument("--direct", action="store_true", help="answer without a tool call")
    parser.add_argument("--flood-tool", default="", help="the tool a question with 'flood' calls")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
