"""A socket that lost its right, as a test watches it: opened with glassbox.json, asked
once, then silent; and the next turn, asked over the REST API by whoever may."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import urllib.parse
import urllib.request

import websockets
from django.test import AsyncClient
from websockets.typing import Subprotocol

from tests.support import api
from tests.support.matching import csrf_token
from tests.support.sockets import ask, connect, finish_turns, json_until_done


async def browser_of(user) -> tuple[AsyncClient, bytes]:
    """A logged-in browser and the cookie header its pages' sockets send."""
    browser = AsyncClient()
    await browser.aforce_login(user)
    return browser, f"sessionid={browser.cookies['sessionid'].value}".encode()


async def silent_socket(conversation, cookie: bytes):
    """A JSON socket that asked one question, saw it answered, and says nothing more."""
    socket = await connect(conversation.pk, as_json=True, headers=[(b"cookie", cookie)])
    connected, _ = await socket.connect()
    assert connected
    await ask(socket, "Tell me a joke")
    assert (await json_until_done(socket))[-1]["state"] == "complete"
    await finish_turns()
    return socket


async def next_turn_over_the_api(conversation, user) -> list[dict]:
    """The rightful owner asks over the REST API; the turn's events, to its end."""
    client = await api.client_for(user)
    events = await api.sse_events(await api.ask(client, conversation))
    await finish_turns()
    assert events[-1]["type"] == "done" and events[-1]["state"] == "complete"
    return events


async def closed_with(socket, code: int, within: float = 1.0) -> bool:
    """Whether the socket's next output is its close with `code`, within `within` seconds."""
    return await socket.receive_output(timeout=within) == {"type": "websocket.close", "code": code}


# Live servers (tests/support/servers.py): a browser, and a socket that asked once.


class Browser:
    """A browser's cookies on a live server: it logs in, opens conversations and posts
    forms with its CSRF token."""

    def __init__(self, url: str, username: str, password: str) -> None:
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        page = self.opener.open(f"{url}/accounts/login/").read().decode()
        token = csrf_token(page)
        self.post("/accounts/login/", {"username": username, "password": password}, token)
        assert "sessionid" in self.cookies, "the login was refused"

    @property
    def cookies(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)

    def csrf_cookie(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken" and c.value is not None)

    def post(self, path: str, form: dict[str, str], token: str | None = None) -> str:
        """The form posted as the page would; the address it ended on."""
        token = token or self.csrf_cookie()
        body = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(
            self.url + path, data=body, headers={"Referer": self.url + path}
        )
        return self.opener.open(request, timeout=30).geturl()

    def new_conversation(self) -> str:
        """An empty conversation, made as a program makes one (the page's New conversation
        stores nothing until the first question)."""
        token = self.csrf_cookie()
        request = urllib.request.Request(
            self.url + "/api/conversations/", data=b"{}", method="POST",
            headers={"Content-Type": "application/json", "X-CSRFToken": token,
                     "Referer": self.url + "/"},
        )  # fmt: skip
        return json.loads(self.opener.open(request, timeout=30).read())["id"]


async def live_silent_socket(url: str, conversation: str, cookies: str):
    """A glassbox.json socket on a live server that asked once, saw the answer, and says
    nothing more."""
    socket = await websockets.connect(
        url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": url},
        subprotocols=[Subprotocol("glassbox.json")],
    )
    await socket.send(json.dumps({"message": "Tell me a joke"}))
    events = [json.loads(await asyncio.wait_for(socket.recv(), 30))]
    while events[-1]["type"] != "done":
        events.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
    assert events[-1]["state"] == "complete"
    return socket


async def live_close_code(socket, within: float) -> int | None:
    """The code the server closed the socket with, within `within` seconds; whatever frame
    arrives first instead fails the test."""
    try:
        frame = await asyncio.wait_for(socket.recv(), within)
    except websockets.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None
    raise AssertionError(f"a closed socket received {frame}")


def live_turn_over_the_api(url: str, token: str, conversation: str) -> list[dict]:
    """The rightful owner asks over the REST API (SSE); the turn's events, to its end."""
    request = urllib.request.Request(
        f"{url}/api/conversations/{conversation}/messages/",
        data=json.dumps({"content": "How do I negotiate my salary?"}).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json",
                 "Accept": "text/event-stream"},
    )  # fmt: skip
    events = [
        json.loads(line[6:])
        for line in urllib.request.urlopen(request, timeout=60)
        if line.startswith(b"data: ")
    ]
    assert events[-1]["type"] == "done" and events[-1]["state"] == "complete", events[-1]
    return events
