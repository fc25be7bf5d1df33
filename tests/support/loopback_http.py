"""A small HTTP server on a loopback port, in threads of the test's process: the stand-in
providers and receivers the tests talk to over real HTTP."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """Logs nothing: the tests' output stays theirs."""

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The server's base URL (`http://127.0.0.1:<port>`) while it serves `handler`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # A request still held when the test ends must not hold up closing the server.
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
