"""Daphne's check of its connections, cut into slices the event loop runs between.

Every 2 s Daphne walks all its connections in one step of the loop: each socket idle for its
ping interval (20 s) is pinged, and each one past a timeout closed. Sockets that opened
together come due together, so with 5,000 quiet sockets one walk sent 5,000 pings while every
turn waited, and the first status of turns asked beside them reached 153 ms at p99 against
48 ms with nothing else open (bench/quiet_sockets.py). Here a walk checks at most SLICE
connections a step and lets the loop run in between; the next walk starts 2 s after the last
slice, as Daphne's own does after its one step."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

SLICE = 200
EVERY_SECONDS = 2.0


def install() -> None:
    from daphne.server import Server

    Server.timeout_checker = _timeout_checker


def _timeout_checker(server: Any) -> None:
    from twisted.internet import reactor as installed

    reactor: Any = installed  # typed as the module, the installed reactor at run time

    def again() -> None:
        reactor.callLater(EVERY_SECONDS, server.timeout_checker)

    walk(list(server.connections), server.connections, reactor.callLater, again)


def walk(
    protocols: list[Any],
    still_open: Collection[Any],
    call_later: Callable[..., Any],
    then: Callable[[], None],
    start: int = 0,
) -> None:
    """Checks `protocols[start:start + SLICE]` that are `still_open` now, and schedules the
    next slice for the loop's next turn; `then` once the last is checked."""
    for protocol in protocols[start : start + SLICE]:
        if protocol in still_open:  # not closed since the walk began
            protocol.check_timeouts()
    if start + SLICE < len(protocols):
        call_later(0, walk, protocols, still_open, call_later, then, start + SLICE)
    else:
        then()
