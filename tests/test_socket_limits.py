"""Frames over Daphne's size limit, against a real Daphne: the connection is dropped before
the application sees anything, and the server goes on serving."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import re
import urllib.parse
import urllib.request

import pytest
import websockets

from tests.servers import serve


def login(url: str) -> tuple[str, str]:
    """Logs in as the demo user like a browser; a new conversation and the cookies."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{url}/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode(
        {"username": "demo", "password": "demo", "csrfmiddlewaretoken": token}
    ).encode()
    opener.open(urllib.request.Request(f"{url}/accounts/login/", data=form,
                                       headers={"Referer": f"{url}/accounts/login/"}))  # fmt: skip
    # Logging in rotates the CSRF token: use the new one from its cookie.
    token = next(c.value for c in jar if c.name == "csrftoken")
    new = opener.open(urllib.request.Request(f"{url}/c/new/", data=b"",
                                             headers={"X-CSRFToken": token}))  # fmt: skip
    conversation = new.geturl().rstrip("/").split("/")[-1]
    cookies = "; ".join(f"{c.name}={c.value}" for c in jar)
    return conversation, cookies


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve(tmp_path_factory.mktemp("limits"))


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
