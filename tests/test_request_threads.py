"""Request threads are kept with their database connections (project.request_threads): a
page served again opens no connection, requests at once each get a thread of their own, and a
burst's extra threads end after it."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator
from django.db.backends.signals import connection_created

from project.asgi import application
from project.request_threads import ReusedRequestThreads


async def page(path: str, cookie: str) -> int:
    headers = [(b"host", b"127.0.0.1"), (b"cookie", cookie.encode())]
    answer = await HttpCommunicator(application, "GET", path, headers=headers).get_response()
    return answer["status"]


def alive_after_ending(threads: list[threading.Thread], kept: int) -> int:
    """How many of `threads` live once all but `kept` have ended (told to end, the extra
    ones end on their own), or after 5 s."""
    deadline = time.monotonic() + 5
    while sum(thread.is_alive() for thread in threads) > kept and time.monotonic() < deadline:
        time.sleep(0.01)
    return sum(thread.is_alive() for thread in threads)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_page_served_again_opens_no_database_connection(alice):
    from django.test import AsyncClient

    client = AsyncClient()
    await client.aforce_login(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    opened: list[object] = []

    def count(sender, connection, **kwargs):
        opened.append(connection)

    assert await page("/", cookie) == 200  # the thread's connection, opened once
    connection_created.connect(count)
    try:
        for _ in range(5):
            assert await page("/", cookie) == 200
    finally:
        connection_created.disconnect(count)
    assert opened == []


@pytest.mark.asyncio
async def test_requests_at_once_each_get_a_thread_and_a_bursts_extra_threads_end():
    at_once = 6
    together = threading.Barrier(at_once, timeout=10)
    threads: list[threading.Thread] = []

    def work() -> None:
        threads.append(threading.current_thread())
        together.wait()  # broken, after 10 s, if the requests shared a thread

    async def app(scope, receive, send) -> None:
        await sync_to_async(work)()  # thread-sensitive, as Django's handler calls a view
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    kept = ReusedRequestThreads(app, kept=2)
    answers = await asyncio.gather(
        *(HttpCommunicator(kept, "GET", "/").get_response() for _ in range(at_once))
    )
    assert [answer["status"] for answer in answers] == [204] * at_once
    assert len(set(threads)) == at_once
    assert len(kept.idle) == 2
    assert await asyncio.to_thread(alive_after_ending, threads, 2) == 2  # the kept ones

    threads.clear()
    together = threading.Barrier(1)
    await HttpCommunicator(kept, "GET", "/").get_response()
    await HttpCommunicator(kept, "GET", "/").get_response()
    assert len(set(threads)) == 1 and threads[0].is_alive()
