"""A scripted OpenAI-compatible provider for a Glassbox server process that a test holds
mid-stream: each request gets the next scripted response, streamed chunk by chunk, and a
response given a hold stops after that many chunks until the test opens it. The server
process's model is paused where the test wants, as the `gate` fixture pauses the demo model
of the test's own process, with no timing involved."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from chat.agent.demo_wire import chunk
from tests.support.loopback_http import QuietHandler, serving

# How long a held response waits for the test at most: a failed test must not hang its server.
HOLD_SECONDS = 60


@dataclass
class Hold:
    """A response held after `after` chunks: `reached` is set when it stops there, `open()`
    lets it go on."""

    after: int
    reached: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)

    def open(self) -> None:
        self.opened.set()


@dataclass
class HeldProvider:
    url: str = ""
    script: list[tuple[list[dict[str, Any]], Hold]] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, deltas: list[dict[str, Any]], *, hold_after: int | None = None) -> Hold:
        """Queues the next response (deltas as tests.support.fakes builds them); its hold,
        which is open from the start when `hold_after` is None."""
        hold = Hold(after=-1 if hold_after is None else hold_after)
        if hold_after is None:
            hold.open()
        with self.lock:
            self.script.append((deltas, hold))
            self.holds.append(hold)
        return hold

    def next(self) -> tuple[list[dict[str, Any]], Hold | None]:
        with self.lock:
            return self.script.pop(0) if self.script else ([], None)

    def open_all(self) -> None:
        with self.lock:
            for hold in self.holds:
                hold.open()


@contextlib.contextmanager
def held_provider() -> Iterator[HeldProvider]:
    provider = HeldProvider()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            deltas, hold = provider.next()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()  # HTTP/1.0: the body ends when the connection closes
            for index, delta in enumerate(deltas):
                if hold is not None and index == hold.after:
                    hold.reached.set()
                    hold.opened.wait(timeout=HOLD_SECONDS)
                data = json.dumps(chunk(dict(delta), created=0), ensure_ascii=False)
                self.wfile.write(f"data: {data}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

    with serving(Handler) as base:
        provider.url = f"{base}/v1"
        try:
            yield provider
        finally:
            provider.open_all()
