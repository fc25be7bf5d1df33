"""Daphne's writes sent as they are made (project.prompt_writes) lose nothing: when the kernel
takes only part of a write, the rest and every write behind it arrive whole and in order, and
a client that vanishes mid-stream costs the others nothing."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import struct
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support import twisted_writer
from tests.support.certificates import self_signed
from tests.support.servers import ROOT


@pytest.fixture
def writer() -> Iterator[Writer]:
    yield from started()


class Writer(subprocess.Popen[str]):
    """The writer's process, and the port it listens on."""

    port = 0


def started(*args: str) -> Iterator[Writer]:
    server = Writer(
        [sys.executable, "-m", "tests.support.twisted_writer", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        server.port = int(server.stdout.readline())
        yield server
    finally:
        server.kill()
        server.wait()


def connect(port: int) -> socket.socket:
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.connect(("127.0.0.1", port))
    return client


def receive(client: socket.socket, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        data = client.recv(min(65536, size - len(got)))
        assert data, f"the stream ended after {len(got)} of {size} bytes"
        got += data
    return bytes(got)


def test_writes_the_kernel_takes_in_part_arrive_whole_and_in_order(writer):
    client = connect(writer.port)
    first = b"".join(twisted_writer.batch(0, 3000))
    second = b"".join(twisted_writer.batch(1, 20))
    # The server writes all of the first batch before this reads a byte: its buffers fill.
    client.sendall(b"batch 0 3000\n")
    assert receive(client, len(first)) == first
    # Everything queued has left: these go out as they are written again.
    client.sendall(b"batch 1 20\nclose\n")
    assert receive(client, len(second)) == second
    assert client.recv(1) == b""
    ways = json.loads(writer.stdout.readline())
    assert ways["sent at once"] >= 20 and ways["partly sent"] >= 1 and ways["queued"] >= 1, ways


def test_a_client_that_vanishes_mid_stream_leaves_the_next_one_served_whole(writer):
    gone = connect(writer.port)
    gone.sendall(b"batch 0 3000\n")
    receive(gone, 1000)
    # Reset, not closed: whatever the server still writes meets a dead connection.
    gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    gone.close()
    assert json.loads(writer.stdout.readline())["queued"] >= 1

    client = connect(writer.port)
    expected = b"".join(twisted_writer.batch(0, 500))
    client.sendall(b"batch 0 500\nclose\n")
    assert receive(client, len(expected)) == expected
    assert client.recv(1) == b""
    assert writer.poll() is None


def test_nothing_written_after_a_connection_is_aborted_reaches_the_peer(writer):
    client = connect(writer.port)
    client.sendall(b"abort\n")
    got = bytearray()
    try:
        while data := client.recv(65536):
            got += data
    except ConnectionResetError:
        pass
    assert twisted_writer.AFTER_ABORT not in got
    # Stock Twisted queues it for a write that never comes; sent at once, it left.
    assert json.loads(writer.stdout.readline())["queued"] == 1


@pytest.fixture
def tls_writer(tmp_path) -> Iterator[Writer]:
    key, certificate = self_signed(tmp_path)
    yield from started("--tls", str(certificate), str(key))


def test_writes_behind_tls_the_kernel_takes_in_part_arrive_whole_and_in_order(tls_writer):
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    client = context.wrap_socket(connect(tls_writer.port))
    expected = b"".join(twisted_writer.batch(0, 3000) + twisted_writer.batch(1, 20))
    client.sendall(b"batch 0 3000\nbatch 1 20\nclose\n")
    assert receive(client, len(expected)) == expected
    with contextlib.suppress(ssl.SSLError):  # a close without TLS's goodbye is also an end
        assert client.recv(1) == b""
