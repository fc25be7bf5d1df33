"""Daphne's walks over its connections (pings due, timeouts; finished applications) run in
slices the event loop serves other work between (project.paced_checks), and still reach every
socket, walk after walk, in a real Daphne."""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path
from types import SimpleNamespace

import aiohttp
import pytest

from project.paced_checks import BUDGET_SECONDS, SLICE, walk
from tests.support.servers import login, serve


class Protocol:
    def __init__(self, checked: list[Protocol]) -> None:
        self.checked = checked

    def check_timeouts(self) -> None:
        self.checked.append(self)


def test_a_walk_checks_one_slice_a_loop_turn_and_skips_what_closed_meanwhile():
    checked: list[Protocol] = []
    protocols = [Protocol(checked) for _ in range(2 * SLICE + 10)]
    still_open = set(protocols)
    handed_to_the_loop: list[tuple[float, tuple]] = []
    walked: list[bool] = []

    def call_later(delay: float, *call: object) -> None:
        handed_to_the_loop.append((delay, call))

    def next_slice() -> None:
        delay, (function, *args) = handed_to_the_loop.pop()
        assert delay == 0  # the loop's next turn, after what is ready now
        function(*args)

    # Time stands still: no slice spends its budget.
    walk(protocols, still_open, call_later, lambda: walked.append(True), clock=lambda: 0.0)
    assert checked == protocols[:SLICE] and not walked

    next_slice()
    assert checked == protocols[: 2 * SLICE] and not walked
    still_open.discard(protocols[-1])  # closed meanwhile
    next_slice()
    assert checked == protocols[:-1] and walked == [True] and not handed_to_the_loop


@pytest.mark.django_db(transaction=True)
@pytest.mark.server
@pytest.mark.own_site  # Daphne's walk, over a SQLite site of its own
def test_every_one_of_hundreds_of_quiet_sockets_is_pinged_walk_after_walk(tmp_path: Path):
    count = SLICE + 50  # more than one slice a walk

    async def quiet_sockets(url: str, conversation: str, cookies: str) -> list[int]:
        address = url.replace("http", "ws") + f"/ws/c/{conversation}/"
        headers = {"Cookie": cookies, "Origin": url}
        # aiohttp's default connector holds at most 100 connections.
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session, asyncio.timeout(60):
            sockets = [
                await session.ws_connect(address, headers=headers, autoping=False)
                for _ in range(count)
            ]

            async def pings(socket: aiohttp.ClientWebSocketResponse) -> int:
                seen = 0
                while seen < 2:
                    message = await socket.receive()
                    if message.type == aiohttp.WSMsgType.PING:
                        seen += 1
                        await socket.pong(message.data)
                    elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                        break
                return seen

            seen = await asyncio.gather(*(pings(socket) for socket in sockets))
            for socket in sockets:
                await socket.close()
            return seen

    with serve(tmp_path, ("--ping-interval", "1")) as server:
        conversation, cookies = login(server.url)
        seen = asyncio.run(quiet_sockets(server.url, conversation, cookies))
    assert seen == [2] * count


class Connection:
    def __init__(self) -> None:
        self.handled: list[str] = []
        self.timed = False

    def check_timeouts(self) -> None:
        self.timed = True

    def handle_exception(self, exception: BaseException) -> None:
        self.handled.append(repr(exception))


class Server:
    application_close_timeout = 10
    application_checker = None  # what Daphne's check schedules next

    def __init__(self) -> None:
        self.connections: dict[Connection, dict] = {}
        self.stopped = 0

    def stop(self) -> None:
        self.stopped += 1


def applications(loop: asyncio.AbstractEventLoop) -> list[asyncio.Future | None]:
    """One of each state an application may be in when a walk finds it."""

    async def waiting() -> None:
        await asyncio.Event().wait()

    cancelling = loop.create_task(waiting())
    loop.run_until_complete(asyncio.sleep(0))  # started: cancelled, it is not done yet
    states: list[asyncio.Future | None] = [None, loop.create_future(), cancelling]
    for outcome in ("result", RuntimeError("broke"), KeyboardInterrupt(), "cancelled"):
        future = loop.create_future()
        if outcome == "result":
            future.set_result(None)
        elif outcome == "cancelled":
            future.cancel()
        else:
            future.set_exception(outcome)  # type: ignore[arg-type]
        states.append(future)
    return states


def walked(check, loop) -> tuple[list, list, int, list]:
    """Every state of an application beside every state of its connection, checked by
    `check(server)`: what is left of the connections, what each was told, the stops."""
    server = Server()
    connections: list[Connection] = []
    futures = applications(loop)
    for application in futures:
        for closed in (None, time.time() - 1, time.time() - 11):
            connection = Connection()
            details: dict = {}
            if application is not None:
                details["application_instance"] = application
            if closed is not None:
                details["disconnected"] = closed
            server.connections[connection] = details
            connections.append(connection)
    check(server)
    left = [sorted(server.connections.get(c, {"gone": 1})) for c in connections]
    told = [c.handled for c in connections]
    cancelled = [f and getattr(f, "cancelling", f.cancelled)() for f in futures]
    return left, told, server.stopped, cancelled


def test_each_connections_application_is_reaped_as_daphne_reaps_it(monkeypatch):
    """Compared with Daphne's own check, over every state of an application and its
    connection: the same connections left, told of their application's failure, cancelled
    and stops asked."""
    from daphne import server as daphne

    from project.paced_checks import _reap

    # Daphne's check schedules its next walk: not here.
    monkeypatch.setattr(daphne, "reactor", SimpleNamespace(callLater=lambda *call: None))
    ours, theirs = asyncio.new_event_loop(), asyncio.new_event_loop()

    def reaped_here(server: Server) -> None:
        for protocol in list(server.connections):
            _reap(server, protocol)

    daphnes = daphne.Server.application_checker
    assert daphnes.__module__ == "daphne.server"  # its own, not the one installed to serve

    here = walked(reaped_here, ours)
    assert here == walked(daphnes, theirs)
    left, told, stopped, cancelled = here
    assert ["gone"] in left and ["application_instance"] in left and [] in left
    assert ["RuntimeError('broke')"] in told and stopped == 3 and cancelled[2] == 1
    for loop in (ours, theirs):
        loop.run_until_complete(asyncio.sleep(0))  # the cancelled task ends
        loop.close()


def test_a_slice_whose_checks_take_its_budget_lets_the_loop_run_and_the_walk_goes_on():
    now = [0.0]
    each = BUDGET_SECONDS * 0.3  # a check that sends a ping

    def ping(protocol: int) -> None:
        checked.append(protocol)
        now[0] += each

    checked: list[int] = []
    scheduled: list[tuple] = []
    walked: list[bool] = []
    protocols = list(range(10))
    still_open = set(protocols) - {1}  # closed meanwhile: not checked, no time taken
    walk(protocols, still_open, lambda _d, *call: scheduled.append(call),
         lambda: walked.append(True), check=ping, clock=lambda: now[0])  # fmt: skip
    assert checked == [0, 2, 3, 4] and not walked  # the fourth check passes the budget

    slices = 1
    while scheduled:
        function, *args = scheduled.pop()
        function(*args)
        slices += 1
    assert checked == [0, *range(2, 10)] and walked == [True] and slices == 3


def test_an_application_walk_reaches_every_slice_with_its_check():
    checked: list[int] = []
    scheduled: list[tuple] = []
    walked: list[bool] = []
    protocols = list(range(2 * SLICE + 10))
    walk(protocols, set(protocols), lambda _d, *call: scheduled.append(call),
         lambda: walked.append(True), check=checked.append)  # fmt: skip
    while scheduled:
        function, *args = scheduled.pop()
        function(*args)
    assert checked == protocols and walked == [True]


def test_each_check_walks_every_connection_and_comes_again_after_its_interval(monkeypatch):
    import twisted.internet

    from project import paced_checks

    later: list[tuple] = []
    fake = SimpleNamespace(callLater=lambda delay, *call: later.append((delay, *call)))
    monkeypatch.setattr(twisted.internet, "reactor", fake, raising=False)
    for checker, every in (("timeout_checker", 2.0), ("application_checker", 1.0)):
        server = Server()
        connections = [Connection() for _ in range(SLICE + 1)]  # more than one slice
        for connection in connections:
            server.connections[connection] = {"disconnected": 1}  # closed, its application over
        check = functools.partial(getattr(paced_checks, f"_{checker}"), server)
        setattr(server, checker, check)
        check()
        while later and later[-1][0] == 0:  # the walk's next slice, on the loop's next turn
            _, function, *args = later.pop()
            function(*args)
        assert later == [(every, check)]  # then the check again, once
        later.clear()
        if checker == "timeout_checker":
            assert all(connection.timed for connection in connections)
        else:
            assert not server.connections  # every one forgotten
