"""Daphne's check of its connections, cut into slices the event loop runs between.

Every 2 s Daphne walks all its connections in one step of the loop: each socket idle for its
ping interval (20 s) is pinged, and each one past a timeout closed. Sockets that opened
together come due together, so with 5,000 quiet sockets one walk sent 5,000 pings while every
turn waited, and the first status of turns asked beside them reached 153 ms at p99 against
48 ms with nothing else open (bench/quiet_sockets.py). Here a walk checks at most SLICE
connections a step and lets the loop run in between; the next walk starts 2 s after the last
slice, as Daphne's own does after its one step.

A slice also ends once it has taken BUDGET_SECONDS: a due ping is a frame built and written
at once (about 0.15 ms), so a slice of 200 sockets that all came due held the loop up to 34 ms,
and with 5,000 quiet sockets such a slice came every 2 s while their pings were due. The
first status of a turn asked then waited for it (bench/quiet_sockets.py). A check of a socket
with nothing due is a few microseconds: such slices still take SLICE at a time.

Daphne's check of the applications is walked so too: every second Daphne reaps the finished
application of each connection, in one step over all of them that also made a tuple of
each, a collection's worth. With 5,000 quiet sockets that step took 8 ms (median) to 30 ms,
once a second, and the first status of a turn asked then waited for it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import time
from collections.abc import Callable, Collection
from typing import Any

SLICE = 200
BUDGET_SECONDS = 0.002
EVERY_SECONDS = 2.0
APPLICATIONS_EVERY_SECONDS = 1.0

# Daphne's own, for the lines its check of the applications writes.
logger = logging.getLogger("daphne.server")


def install() -> None:
    from daphne.server import Server

    Server.timeout_checker = _timeout_checker
    Server.application_checker = _application_checker


def _timeout_checker(server: Any) -> None:
    _walk_connections(server, _check_timeouts, EVERY_SECONDS, server.timeout_checker)


def _application_checker(server: Any) -> None:
    reap = functools.partial(_reap, server)
    _walk_connections(server, reap, APPLICATIONS_EVERY_SECONDS, server.application_checker)


def _walk_connections(
    server: Any, check: Callable[[Any], None], every: float, checker: Callable[[], None]
) -> None:
    """One walk of `server`'s connections with `check`; `checker` again `every` seconds
    after its last slice, as Daphne's own follows its one step."""
    from twisted.internet import reactor as installed

    reactor: Any = installed  # typed as the module, the installed reactor at run time

    def again() -> None:
        reactor.callLater(every, checker)

    walk(list(server.connections), server.connections, reactor.callLater, again, check=check)


def _reap(server: Any, protocol: Any) -> None:
    """Daphne's `Server.application_checker` (4.2) for one connection: its application,
    cancelled once it outlives its closed connection by the close timeout, let go of (its
    exception logged) once finished, and the connection forgotten once both are over."""
    details = server.connections.get(protocol)
    if details is None:
        return
    disconnected = details.get("disconnected", None)
    application = details.get("application_instance", None)
    outlived = disconnected and time.time() - disconnected > server.application_close_timeout
    if outlived and application and not application.done():
        logger.warning(
            "Application instance %r for connection %s took too long to shut down and was killed.",
            application,
            repr(protocol),
        )
        application.cancel()
    if application and application.done():
        try:
            exception = application.exception()
        except (concurrent.futures.CancelledError, asyncio.CancelledError):
            pass
        else:
            if isinstance(exception, KeyboardInterrupt):
                server.stop()  # the protocol asks the server to exit
            elif exception:
                logger.error("Exception inside application: %s", exception, exc_info=exception)
                if not disconnected:
                    protocol.handle_exception(exception)
        del details["application_instance"]
        application = None
    if not application and disconnected:
        del server.connections[protocol]


def _check_timeouts(protocol: Any) -> None:
    protocol.check_timeouts()


def walk(
    protocols: list[Any],
    still_open: Collection[Any],
    call_later: Callable[..., Any],
    then: Callable[[], None],
    start: int = 0,
    check: Callable[[Any], None] = _check_timeouts,
    clock: Callable[[], float] = time.perf_counter,
) -> None:
    """`check`s `protocols[start:start + SLICE]` that are `still_open` now (their timeouts
    by default), fewer if those checked have taken BUDGET_SECONDS by `clock`, and schedules
    the next slice for the loop's next turn; `then` once the last is checked."""
    deadline = clock() + BUDGET_SECONDS
    end = min(start + SLICE, len(protocols))
    index = start
    while index < end:
        protocol = protocols[index]
        index += 1
        if protocol in still_open:  # not closed since the walk began
            check(protocol)
            if clock() >= deadline:
                break
    if index < len(protocols):
        call_later(0, walk, protocols, still_open, call_later, then, index, check, clock)
    else:
        then()
