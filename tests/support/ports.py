"""Ports for the servers tests start, and whether one is being listened on."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port free now; another process may take it before the caller binds it, so a server
    that can bind port 0 and say which it got is the surer way (`start_daphne`)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def accepting(port: int, timeout: float = 0.2) -> bool:
    """Whether something listens on the loopback `port`. A connection to a port nobody
    listens on can still succeed: when the kernel gives the connecting socket that very
    port, TCP's simultaneous open connects it to itself. A wait for a server that is still
    starting tries often enough to meet that, so such a connection does not count."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            return sock.getsockname() != sock.getpeername()
    except OSError:
        return False
