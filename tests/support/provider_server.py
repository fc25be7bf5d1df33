"""A scripted OpenAI-compatible provider on a real loopback port, for turns started by a
socket or the API (which use the configured provider, not a test's client): each request
gets the next scripted response, in OpenAI's streaming wire format."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chat.agent.demo_wire import chunk
from tests.support.loopback_http import QuietHandler, serving


class Provider:
    """Where the provider listens (`url`, for OPENAI_BASE_URL), the hold on its first
    response: with `held`, it answers only once `open()` is called (as a demo gate), and the
    requests it was sent (their JSON bodies: the model's rounds, with the tools offered)."""

    def __init__(self, held: bool) -> None:
        self.url = ""
        self.requests: list[dict[str, Any]] = []
        self.released = threading.Event()
        if not held:
            self.released.set()

    def open(self) -> None:
        self.released.set()


@contextmanager
def scripted_provider(
    responses: list[list[dict[str, Any]]], *, held: bool = False
) -> Iterator[Provider]:
    """Serves `responses` (lists of deltas, as tests.support.fakes builds them) in turn."""
    queue = list(responses)
    provider = Provider(held)

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            provider.requests.append(json.loads(body or b"{}"))
            provider.released.wait(timeout=30)
            deltas = queue.pop(0) if queue else []
            body = b"".join(
                f"data: {json.dumps(chunk(dict(delta), created=0))}\n\n".encode()
                for delta in deltas
            )
            body += b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as base:
        provider.url = f"{base}/v1"
        try:
            yield provider
        finally:
            provider.open()
