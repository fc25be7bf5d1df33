"""A Twisted server on the reactor Daphne runs here (asyncio on uvloop), with
project.prompt_writes installed, that writes numbered batches on request, for
tests/test_prompt_writes.py. Run as a program: it prints its port, then one JSON line per
connection that ended, saying how its writes went.

A client sends `batch FIRST COUNT` (the server writes batch(FIRST, COUNT), a chunk a write),
`close`, or `abort` (the server aborts the connection, then writes AFTER_ABORT to it, as a
protocol may before it hears of the abort)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import cast

import uvloop

# The server's send buffer: small, so that the kernel takes only part of a batch.
SEND_BUFFER = 4096
AFTER_ABORT = b"written after the connection was aborted"


def batch(first: int, count: int) -> list[bytes]:
    """Chunks of varied sizes, each made of its own number, so a lost or misplaced byte shows;
    every 500th is larger than the kernel takes at once."""
    return [
        b"%08d" % n * (1 + n % 50 + 20_000 * (n % 500 == 0)) for n in range(first, first + count)
    ]


def main() -> None:
    # `--tls CERTIFICATE KEY`: the same server behind Twisted's TLS, as Daphne's `-e ssl:`.
    tls = sys.argv[2:4] if sys.argv[1:2] == ["--tls"] else None
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    from twisted.internet import asyncioreactor

    asyncioreactor.install(asyncio.new_event_loop())
    from project import prompt_writes

    prompt_writes.install()
    from twisted.internet import protocol, tcp
    from twisted.internet import reactor as installed
    from twisted.internet.asyncioreactor import AsyncioSelectorReactor
    from twisted.protocols.tls import TLSMemoryBIOProtocol
    from twisted.python.failure import Failure

    # Twisted declares the reactor and transports as zope interfaces, whose methods mypy reads
    # as taking no self (only the mypy-zope plugin reads them): their classes are named here.
    reactor = cast(AsyncioSelectorReactor, installed)

    class Writer(protocol.Protocol):
        def connectionMade(self) -> None:
            self.tls = cast(TLSMemoryBIOProtocol, self.transport) if tls else None
            self.tcp = cast(tcp.Server, self.tls.transport if self.tls else self.transport)
            self.tcp.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            self.ways = {"sent at once": 0, "partly sent": 0, "queued": 0}
            self.pending = b""

        def dataReceived(self, data: bytes) -> None:
            self.pending += data
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                if line == b"close":
                    (self.tls or self.tcp).loseConnection()
                elif line == b"abort":
                    (self.tls or self.tcp).abortConnection()
                    self.write(AFTER_ABORT)
                else:
                    _, first, count = line.split()
                    for chunk in batch(int(first), int(count)):
                        self.write(chunk)

        def write(self, chunk: bytes) -> None:
            if self.tls:  # the TLS layer: its socket's writes are not told apart here
                self.tls.write(chunk)
                return
            before = self.tcp._tempDataLen
            self.tcp.write(chunk)
            after = self.tcp._tempDataLen
            if after == before:
                self.ways["sent at once"] += 1
            elif before == 0 and after < len(chunk):
                self.ways["partly sent"] += 1
            else:
                self.ways["queued"] += 1

        def connectionLost(self, reason: Failure | None = None) -> None:
            print(json.dumps(self.ways), flush=True)

    factory = protocol.Factory.forProtocol(Writer)
    if tls:
        from twisted.internet import ssl

        context = ssl.DefaultOpenSSLContextFactory(tls[1], tls[0])
        port = reactor.listenSSL(0, factory, context, interface="127.0.0.1")
    else:
        port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    print(port.getHost().port, flush=True)
    reactor.run()


if __name__ == "__main__":
    main()
