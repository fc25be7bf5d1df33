"""Daphne's walk over its connections (pings due, timeouts) runs in slices the event loop
serves other work between (project.paced_checks), and still reaches every socket, walk after
walk, in a real Daphne."""

from __future__ import annotations

import asyncio
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
