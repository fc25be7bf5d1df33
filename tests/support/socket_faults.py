"""A model provider on a raw loopback socket that breaks its connections the way networks do:
it closes or resets one before answering, or resets one mid-stream. What the client's HTTP
transport makes of real socket faults is what these serve (a fault-injecting httpx transport
never reaches it)."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from chat.agent.demo_wire import chunk
from tests.support.certificates import self_signed

Behaviour = Callable[[socket.socket], None]


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return b""
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.lower().split(b"\r\n")
         if line.startswith(b"content-length:")),
        0,
    )  # fmt: skip
    while len(body) < length:
        part = conn.recv(65536)
        if not part:
            break
        body += part
    return head


def _reset(conn: socket.socket) -> None:
    """Closes with an RST instead of a FIN, as a crashed peer or a middlebox does."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def sse_event(content: str) -> bytes:
    data = f"data: {json.dumps(chunk({'content': content}, created=0))}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def closes_before_answering(conn: socket.socket) -> None:
    _read_request(conn)
    conn.close()


def resets_before_answering(conn: socket.socket) -> None:
    _read_request(conn)
    _reset(conn)


def resets_mid_stream(conn: socket.socket) -> None:
    _read_request(conn)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n" + sse_event("Partial answer")
    )
    _reset(conn)


def closes_mid_stream(conn: socket.socket) -> None:
    _read_request(conn)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n" + sse_event("Partial answer")
    )
    conn.close()


@contextlib.contextmanager
def faulty_provider(behaviour: Behaviour, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """The provider's base URL while every connection made to it meets `behaviour` (over
    TLS with `tls`, a server context)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_run, args=(behaviour, conn, tls), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    scheme = "https" if tls else "http"
    try:
        yield f"{scheme}://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        listener.close()


def _run(behaviour: Behaviour, conn: socket.socket, tls: ssl.SSLContext | None) -> None:
    with contextlib.suppress(OSError):
        behaviour(tls.wrap_socket(conn, server_side=True) if tls else conn)


def tls_for_loopback(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context for 127.0.0.1 with a certificate of its own making, and the file of
    that certificate, for a client to trust (SSL_CERT_FILE)."""
    key_file, certificate_file = self_signed(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate_file, key_file)
    return context, certificate_file


def refused_url() -> str:
    """A loopback URL nothing listens on: connecting is refused."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _answer(conn: socket.socket, text: str) -> None:
    data = (
        "".join(
            f"data: {json.dumps(chunk(delta, created=0))}\n\n"
            for delta in ({"content": text}, {"finish_reason": "stop"})
        )
        + "data: [DONE]\n\n"
    )
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        + f"content-length: {len(data)}\r\n\r\n".encode()
        + data.encode()
    )


class IdleCloser:
    """Answers one request on each connection, keeping it open as HTTP/1.1 does, then closes it
    while it is idle when `close_idle()` is called (a provider's or proxy's idle timeout)."""

    def __init__(self) -> None:
        self.connections = 0
        self.close_now = threading.Event()
        self.closed = threading.Event()

    def __call__(self, conn: socket.socket) -> None:
        self.connections += 1
        if not _read_request(conn):
            return
        _answer(conn, "Hello")
        self.close_now.wait()
        conn.close()
        self.closed.set()

    def close_idle(self) -> None:
        self.close_now.set()
        self.closed.wait()


class Recorder:
    """Answers every request and keeps its request line: as an HTTP proxy, the full URL the
    client asked it to fetch."""

    def __init__(self) -> None:
        self.request_lines: list[str] = []

    def __call__(self, conn: socket.socket) -> None:
        while head := _read_request(conn):
            self.request_lines.append(head.split(b"\r\n", 1)[0].decode())
            _answer(conn, "Hello")


class Stalls:
    """Sends the headers (and, `after_text`, some text), then nothing until `release()`:
    a provider that hangs before or in the middle of its answer."""

    def __init__(self, *, after_text: bool) -> None:
        self.after_text = after_text
        self.released = threading.Event()

    def __call__(self, conn: socket.socket) -> None:
        _read_request(conn)
        if self.after_text:
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n" + sse_event("Partial answer")
            )
        self.released.wait()
        conn.close()

    def release(self) -> None:
        self.released.set()


class Script:
    """Answers the requests it is sent with `replies` in turn (raw HTTP heads and bodies, or
    None for the answer "Hello"), keeping connections open; records each request line."""

    def __init__(self, replies: list[bytes | None]) -> None:
        self.replies = list(replies)
        self.request_lines: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, conn: socket.socket) -> None:
        while head := _read_request(conn):
            with self.lock:
                self.request_lines.append(head.split(b"\r\n", 1)[0].decode())
                reply = self.replies.pop(0) if self.replies else None
            if reply is None:
                _answer(conn, "Hello")
            else:
                conn.sendall(reply)


def error_reply(status: str, message: str, *headers: str) -> bytes:
    body = json.dumps({"error": {"message": message}}).encode()
    head = "".join(f"{header}\r\n" for header in headers)
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{head}"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


class Chunked:
    """Answers as streaming providers do, in chunked encoding on kept-alive connections,
    counting them. `partial` requests get some text and then nothing more (until the client
    closes): a reply the client stops reading."""

    def __init__(self, partial: int = 0) -> None:
        self.partial = partial
        self.connections = 0
        # Each connection has a thread of its own.
        self.lock = threading.Lock()

    def __call__(self, conn: socket.socket) -> None:
        with self.lock:
            self.connections += 1
        while _read_request(conn):
            # Counted before the text leaves: the client's next connection may be read first.
            with self.lock:
                partial, self.partial = self.partial > 0, max(self.partial - 1, 0)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n" + sse_event("Hello")
            )
            if partial:
                while conn.recv(65536):  # whatever comes, until the client hangs up
                    pass
                return
            stop = json.dumps(chunk({"finish_reason": "stop"}, created=0))
            done = f"data: {stop}\n\ndata: [DONE]\n\n".encode()
            conn.sendall(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")


class TunnelProxy:
    """An HTTPS proxy: it opens the tunnel a CONNECT asks for and relays the bytes both ways,
    keeping the targets it was asked for."""

    def __init__(self) -> None:
        self.targets: list[str] = []

    def __call__(self, conn: socket.socket) -> None:
        head = _read_request(conn)
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        self.targets.append(f"{method} {target}")
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as upstream:
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            back = threading.Thread(target=_relay, args=(upstream, conn), daemon=True)
            back.start()
            _relay(conn, upstream)
            back.join()


def _relay(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)
