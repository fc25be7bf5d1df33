"""A graceful restart loses nothing: on SIGTERM a process takes no new turn, lets its running
turns finish, then exits, dropping its sockets so that they reconnect (1006, which htmx
retries); with two processes sharing PostgreSQL and Redis, the clients carry on with the
other one."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import urllib.error
import urllib.request

import pytest
import websockets
from websockets.typing import Subprotocol

from tests.support.servers import api, demo_token, login, start_daphne, two_servers

pytestmark = pytest.mark.server

QUESTION = "How do I negotiate my salary?"


class Asker(threading.Thread):
    """One question over SSE; `started` is set once its first status line arrived."""

    def __init__(self, server, token, conversation):
        super().__init__(daemon=True)
        self.server, self.token, self.conversation = server, token, conversation
        self.events: list[dict] = []
        self.started = threading.Event()

    def run(self):
        path = f"/api/conversations/{self.conversation}/messages/"
        body = {"content": QUESTION}
        for raw in api(self.server, self.token, path, body, accept="text/event-stream"):
            if raw.startswith(b"data: "):
                self.events.append(json.loads(raw[6:]))
                if self.events[-1]["type"] == "status":
                    self.started.set()


def ask_many(server, token, conversations) -> list[Asker]:
    askers = [Asker(server, token, conversation) for conversation in conversations]
    for asker in askers:
        asker.start()
    for asker in askers:
        assert asker.started.wait(30), asker.events
    return askers


async def watch_until_told_to_reconnect(server, conversation, cookies) -> int:
    async with websockets.connect(
        server.url.replace("http", "ws") + f"/ws/c/{conversation}/",
        additional_headers={"Cookie": cookies, "Origin": server.url},
        subprotocols=[Subprotocol("glassbox.json")],
    ) as socket:
        try:
            while True:
                await asyncio.wait_for(socket.recv(), 60)
        except websockets.ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else 1006


def test_restarting_each_process_in_turn_loses_no_turn(tmp_path):
    limits = {"GLASSBOX_MAX_CONCURRENT_TURNS": "100", "GLASSBOX_DEMO_DELAY": "0.01"}
    with two_servers(tmp_path, **limits) as (first, second):
        token = demo_token(first.env)
        conversations = [
            json.load(api(first, token, "/api/conversations/", {"title": f"c{n}"}))["id"]
            for n in range(20)
        ]
        watched, cookies = login(second.url)
        watcher = threading.Thread(
            target=lambda: codes.append(
                asyncio.run(watch_until_told_to_reconnect(second, watched, cookies))
            ),
            daemon=True,
        )
        codes: list[int] = []
        watcher.start()

        on_first = ask_many(first, token, conversations[:10])
        first.process.send_signal(signal.SIGTERM)
        # While the first drains, it takes no new question: a program is told to retry.
        with pytest.raises(urllib.error.HTTPError) as refused:
            api(first, token, f"/api/conversations/{conversations[10]}/messages/",
                 {"content": QUESTION}, accept="text/event-stream")  # fmt: skip
        assert refused.value.code == 503 and refused.value.headers["Retry-After"]
        on_second = ask_many(second, token, conversations[10:])
        assert first.process.wait(timeout=60) == 0
        first.log.close()
        restarted = start_daphne(first.env)
        try:
            second.process.send_signal(signal.SIGTERM)
            assert second.process.wait(timeout=60) == 0
            watcher.join(10)
            # Every stream ran to its end on the process that was stopping.
            for asker in on_first + on_second:
                asker.join(10)
                assert asker.events[-1]["type"] == "done", asker.events[-3:]
                assert asker.events[-1]["state"] == "complete"
            assert codes == [1006]  # dropped, not closed: htmx reconnects, to the other process
            answers = []
            for conversation in conversations:
                data = json.load(api(restarted, token, f"/api/conversations/{conversation}/"))
                answers += [m for m in data["messages"] if m["role"] == "assistant"]
            assert len(answers) == 20 and {a["state"] for a in answers} == {"complete"}
            assert all("Salary negotiation" in a["content"] for a in answers)
        finally:
            restarted.stop()
