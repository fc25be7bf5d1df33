"""Daphne's walks over its connections (pings due, timeouts; finished applications) run in
slices the event loop serves other work between (project.paced_checks), and still reach every
socket, walk after walk, in a real Daphne."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest

from project.paced_checks import SLICE, walk
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

    walk(protocols, still_open, call_later, lambda: walked.append(True))
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
    count = SLICE + 50  # two slices a walk

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
        self.handled: list[BaseException] = []

    def handle_exception(self, exception: BaseException) -> None:
        self.handled.append(exception)


class Server:
    application_close_timeout = 10

    def __init__(self) -> None:
        self.connections: dict[Connection, dict] = {}
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_each_connections_application_is_reaped_as_daphne_reaps_it(caplog):
    from project.paced_checks import _reap

    loop = asyncio.new_event_loop()
    server = Server()
    running, failed, finished, outlived = (Connection() for _ in range(4))
    applications: dict[Connection, asyncio.Future] = {}
    for protocol in (running, failed, finished, outlived):
        applications[protocol] = loop.create_future()
        server.connections[protocol] = {"application_instance": applications[protocol]}
    problem = RuntimeError("the consumer broke")
    applications[failed].set_exception(problem)
    applications[finished].set_result(None)
    server.connections[finished]["disconnected"] = time.time()
    server.connections[outlived]["disconnected"] = time.time() - 11

    for protocol in list(server.connections):
        _reap(server, protocol)

    # Still running: kept as it is.
    assert server.connections[running] == {"application_instance": applications[running]}
    # Failed while connected: logged, the connection told (it closes), the application let go.
    assert failed.handled == [problem] and server.connections[failed] == {}
    assert "Exception inside application: the consumer broke" in caplog.text
    # Finished after its connection closed: forgotten.
    assert finished not in server.connections
    # Outlived its closed connection by the close timeout: cancelled, reaped on the next walk.
    assert applications[outlived].cancelled() and "took too long to shut down" in caplog.text
    _reap(server, outlived)
    assert outlived not in server.connections and not server.stopped
    loop.close()
