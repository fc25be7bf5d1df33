"""Daphne's socket writes sent when they are made.

Twisted queues every write until the reactor's next turn: it asks the event loop to watch the
socket for room, sends, then stops watching. For a stream of small WebSocket frames that is
three trips through the loop and epoll for each frame, and py-spy put that bookkeeping at
about a fifth of a streaming turn's CPU. Here a write to a connection with nothing queued is
sent at once. What the kernel does not take, and every write behind it, goes Twisted's usual
way, so the order of bytes, back-pressure (a producer paused on a full buffer) and the
handling of a connection that broke stay Twisted's."""

from __future__ import annotations

from typing import Any

from twisted.internet import tcp

_queued_write = tcp.Connection.write


def install() -> None:
    tcp.Connection.write = _write_now  # type: ignore[method-assign]


def _write_now(connection: Any, data: bytes) -> None:
    if (
        type(data) is bytes
        and data
        and not connection.TLS  # startTLS's own layer: its bytes reach here another way
        and connection.connected
        and not connection.disconnecting
        and not connection._aborting  # aborted: what it still writes is dropped, never sent
        and not connection._writeDisconnected
        and not connection._tempDataLen
        and connection.offset == len(connection.dataBuffer)
    ):
        sent = connection.writeSomeData(data)
        # An error (returned, not raised) is left for the queued write to meet and report.
        if type(sent) is int and sent > 0:
            if sent == len(data):
                return
            data = data[sent:]
    _queued_write(connection, data)
