"""Frames over Daphne's size limit, against a real Daphne: the connection is dropped before
the application sees anything, and the server goes on serving."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from tests.support.servers import login, serve

pytestmark = [pytest.mark.server, pytest.mark.own_site]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("limits")) as server:
        yield server


def socket_to(server, conversation, cookies):
    return websockets.connect(
        server.url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": server.url},
        max_size=None,
    )


def test_an_oversized_frame_closes_only_that_socket(server):
    conversation, cookies = login(server.url)

    async def scenario():
        async with socket_to(server, conversation, cookies) as socket:
            await socket.send(json.dumps({"message": "x" * 200_000}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(socket.recv(), 10)
            # Daphne fails the connection (1006) without handing the message to the app.
            assert isinstance(closed.value, websockets.ConnectionClosedError)
            assert closed.value.rcvd is None
        async with socket_to(server, conversation, cookies) as socket:
            await socket.send(json.dumps({"message": "x" * 9000}))
            notice = await asyncio.wait_for(socket.recv(), 10)
            assert "the limit is 8,000" in notice
            await socket.send(json.dumps({"message": "Tell me a joke"}))
            while "state-complete" not in await asyncio.wait_for(socket.recv(), 10):
                pass

    asyncio.run(scenario())
