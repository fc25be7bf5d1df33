"""A scripted OpenAI Responses API server on a real loopback port: each `POST /v1/responses`
gets the next scripted reply, streamed as OpenAI streams it (`event:` and `data:` lines, one
event per typed object, numbered), or cut off, or refused with an HTTP error, or sent whole.
The builders below write the events of OpenAI's stream (openai 3.57's ResponseStreamEvent)."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.support.loopback_http import QuietHandler, serving

MODEL = "o4-mini-2025-04-16"


@dataclass
class Reply:
    """One request's answer: its events; with `cut_after`, only that many of them and then the
    connection closed while more was announced; with `status`, that HTTP error and `error`
    as its body; with `whole`, one JSON Response instead of a stream. `raw` is sent as it is
    after the events (a broken line, a wrong type)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    cut_after: int | None = None
    status: int = 200
    error: dict[str, Any] | None = None
    whole: dict[str, Any] | None = None
    raw: bytes = b""
    # With `held`, the stream stops after this many events until the server's `release()`.
    held: int | None = None


class Server:
    """Where it listens (`url`, for OPENAI_BASE_URL) and the requests it was sent (their JSON
    bodies, one per model round)."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.released = threading.Event()

    def release(self) -> None:
        self.released.set()


@contextmanager
def responses_server(replies: list[Reply]) -> Iterator[Server]:
    queue = list(replies)
    server = Server()
    lock = threading.Lock()

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with lock:
                server.paths.append(self.path)
                server.requests.append(json.loads(body or b"{}"))
                reply = queue.pop(0) if queue else Reply(status=500)
            if reply.status != 200:
                return self._send(reply.status, "application/json", _error_body(reply))
            if reply.whole is not None:
                return self._send(200, "application/json", json.dumps(reply.whole).encode())
            shown = reply.events if reply.cut_after is None else reply.events[: reply.cut_after]
            data = b"".join(sse(event) for event in shown) + reply.raw
            if reply.held is not None:
                return self._held(data, b"".join(sse(event) for event in shown[: reply.held]))
            if reply.cut_after is None:
                return self._send(200, "text/event-stream", data)
            # More is announced than is sent: the client sees the connection cut mid-body.
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data) + 1000))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            self.close_connection = True

        def _held(self, data: bytes, first: bytes) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(first)
            self.wfile.flush()
            server.released.wait(timeout=60)
            self.wfile.write(data[len(first) :])

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with serving(Handler) as base:
        server.url = f"{base}/v1"
        try:
            yield server
        finally:
            server.release()


def _error_body(reply: Reply) -> bytes:
    return json.dumps({"error": reply.error or {"message": "scripted failure"}}).encode()


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def numbered(*events: dict[str, Any]) -> list[dict[str, Any]]:
    """The events with their sequence numbers, as the stream numbers them."""
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def response(
    status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None = None, **more: Any
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": MODEL,
        "status": status,
        "output": output,
        "usage": usage,
        **more,
    }


def usage(
    input_tokens: int, output_tokens: int, reasoning: int = 0, cached: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


class Output:
    """The output items of one reply, each streamed as OpenAI streams it; `events()` wraps
    them in the response's opening and its end."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.streamed: list[dict[str, Any]] = []
        self.ids = itertools.count()

    def reasoning(self, *parts: str, encrypted: str = "", size: int = 6) -> Output:
        index, item_id = len(self.items), f"rs_{next(self.ids)}"
        item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        at = {"item_id": item_id, "output_index": index}
        self.streamed.append(
            {"type": "response.output_item.added", "output_index": index, "item": item}
        )
        for part_index, text in enumerate(parts):
            part = {**at, "summary_index": part_index}
            self.streamed.append(
                {"type": "response.reasoning_summary_part.added", **part,
                 "part": {"type": "summary_text", "text": ""}}
            )  # fmt: skip
            self.streamed += [
                {"type": "response.reasoning_summary_text.delta", **part, "delta": piece}
                for piece in _pieces(text, size)
            ]
            self.streamed += [
                {"type": "response.reasoning_summary_text.done", **part, "text": text},
                {"type": "response.reasoning_summary_part.done", **part,
                 "part": {"type": "summary_text", "text": text}},
            ]  # fmt: skip
        done = {
            **item,
            "summary": [{"type": "summary_text", "text": text} for text in parts],
            "encrypted_content": encrypted or None,
        }
        self._done(index, done)
        return self

    def text(self, text: str, size: int = 5, refusal: bool = False) -> Output:
        index, item_id = len(self.items), f"msg_{next(self.ids)}"
        kind, key = ("refusal", "refusal") if refusal else ("output_text", "text")
        item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress",
                "content": []}  # fmt: skip
        at = {"item_id": item_id, "output_index": index, "content_index": 0}
        part = {"type": kind, key: "", **({} if refusal else {"annotations": []})}
        self.streamed += [
            {"type": "response.output_item.added", "output_index": index, "item": item},
            {"type": "response.content_part.added", **at, "part": part},
        ]
        delta = "response.refusal.delta" if refusal else "response.output_text.delta"
        self.streamed += [
            {"type": delta, **at, "delta": piece, **({} if refusal else {"logprobs": []})}
            for piece in _pieces(text, size)
        ]
        finished = {**part, key: text}
        self.streamed += [
            {"type": "response.refusal.done" if refusal else "response.output_text.done", **at,
             key: text, **({} if refusal else {"logprobs": []})},
            {"type": "response.content_part.done", **at, "part": finished},
        ]  # fmt: skip
        self._done(index, {**item, "status": "completed", "content": [finished]})
        return self

    def calls(self, *calls: tuple[str, str, str], size: int = 4) -> Output:
        """Parallel function calls, (call_id, name, arguments) each, their arguments' deltas
        interleaved as OpenAI interleaves them."""
        first = len(self.items)
        items = []
        for offset, (call_id, name, _) in enumerate(calls):
            item = {"id": f"fc_{next(self.ids)}", "type": "function_call", "call_id": call_id,
                    "name": name, "arguments": "", "status": "in_progress"}  # fmt: skip
            items.append(item)
            self.streamed.append(
                {"type": "response.output_item.added", "output_index": first + offset,
                 "item": item}
            )  # fmt: skip
        pieces = [_pieces(arguments, size) for _, _, arguments in calls]
        for step in range(max(len(p) for p in pieces)):
            for offset, chunks in enumerate(pieces):
                if step < len(chunks):
                    self.streamed.append(
                        {"type": "response.function_call_arguments.delta",
                         "item_id": items[offset]["id"], "output_index": first + offset,
                         "delta": chunks[step]}
                    )  # fmt: skip
        for offset, (item, (_, _, arguments)) in enumerate(zip(items, calls, strict=True)):
            self.streamed.append(
                {"type": "response.function_call_arguments.done", "item_id": item["id"],
                 "output_index": first + offset, "arguments": arguments}
            )  # fmt: skip
            self._done(first + offset, {**item, "arguments": arguments, "status": "completed"})
        return self

    def _done(self, index: int, item: dict[str, Any]) -> None:
        self.items.append(item)
        self.streamed.append({"type": "response.output_item.done", "output_index": index,
                              "item": item})  # fmt: skip

    def events(
        self, spent: dict[str, Any] | None = None, end: str = "completed", **more: Any
    ) -> list[dict[str, Any]]:
        opened = response("in_progress", [])
        closed = response(end, self.items, spent, **more)
        return numbered(
            {"type": "response.created", "response": opened},
            {"type": "response.in_progress", "response": opened},
            *self.streamed,
            {"type": f"response.{end}", "response": closed},
        )


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
