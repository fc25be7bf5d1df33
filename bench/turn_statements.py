"""Every statement one question costs the database, and every trip to the database thread,
from the socket's handshake to `done`: the real ASGI application (Channels, its auth
middleware, the consumer, the turn pipeline) in this process on a fresh SQLite file, asked
over the JSON socket, with the paced fake model in its own process.

    .venv/bin/python bench/turn_statements.py             # 10 turns, the last one listed
    .venv/bin/python bench/turn_statements.py --watchers 1  # another tab watches each turn

The first turn of a process also loads what it keeps (the knowledge base, the MCP servers'
tools): the averages leave it out.

A trip is a call into the database thread (asgiref's sync_to_async, which the ORM's async
methods and channels' database_sync_to_async use): under a burst
every trip queues behind all the others, so their number matters as much as the statements'."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import re
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from common import django_with_fresh_database, fake_llm, machine, report

QUESTION = "How do I negotiate my salary?"


class Census:
    def __init__(self) -> None:
        self.statements: list[tuple[str, str]] = []  # (phase, sql)
        self.trips: Counter[str] = Counter()
        # CPU time of the database thread per function it ran (ORM, driver and all).
        self.cpu: defaultdict[str, float] = defaultdict(float)
        self.runs: Counter[str] = Counter()
        self.phase = "idle"
        self.last = 0  # where the last turn's statements start

    def statement(self, execute, sql, params, many, context):
        self.statements.append((self.phase, _shape(sql)))
        return execute(sql, params, many, context)


def _shape(sql: str) -> str:
    """A statement without its values, short enough to read in a line."""
    sql = re.sub(r"\s+", " ", sql.strip())
    sql = re.sub(r'"[a-z_]+"\."([a-z_]+)"', r"\1", sql)
    if sql.startswith("SELECT"):
        columns, _, rest = sql.partition(" FROM ")
        sql = f"SELECT … FROM {rest}" if len(columns) > 40 else sql
    if sql.startswith("INSERT"):
        sql = sql.split(" (", 1)[0] + " …"
    return sql[:150]


def _name(func) -> str:
    while isinstance(func, functools.partial):
        func = func.func
    func = getattr(func, "__wrapped__", func)
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


def install(census: Census) -> None:
    from asgiref.sync import SyncToAsync
    from django.db.backends.signals import connection_created

    def created(sender, connection, **kwargs) -> None:
        connection.execute_wrappers.append(census.statement)

    connection_created.connect(created, weak=False)
    original = SyncToAsync.thread_handler

    def counted(self, loop, exc_info, task_context, func, *args, **kwargs):
        if census.phase == "idle":  # the bench's own set-up
            return original(self, loop, exc_info, task_context, func, *args, **kwargs)
        census.trips[census.phase] += 1
        started = time.thread_time()
        try:
            return original(self, loop, exc_info, task_context, func, *args, **kwargs)
        finally:
            name = _name(self.func)
            census.cpu[name] += time.thread_time() - started
            census.runs[name] += 1

    SyncToAsync.thread_handler = counted  # type: ignore[method-assign]


def _socket(application, conversation: str, cookie: str):
    from channels.testing import WebsocketCommunicator

    return WebsocketCommunicator(
        application,
        f"/ws/c/{conversation}/",
        headers=[(b"cookie", cookie.encode()), (b"origin", b"http://localhost")],
        subprotocols=["glassbox.json"],
    )


async def _until_done(communicator) -> list[dict]:
    events = []
    while True:
        event = json.loads(await communicator.receive_from(timeout=30))
        events.append(event)
        if event["type"] in ("done", "error"):
            return events


async def one_turn(
    application, census: Census, conversation: str, cookie: str, watchers: int = 0
) -> list[dict]:
    """One question over a socket; `watchers` other sockets of the same login watch it,
    and what they cost once the question is asked (their check before a new turn) counts
    in its `ask` phase."""
    census.phase = "watch"  # their opening is not the question's
    watching = [_socket(application, conversation, cookie) for _ in range(watchers)]
    for watcher in watching:
        assert (await watcher.connect(timeout=10))[0]
    communicator = _socket(application, conversation, cookie)
    census.phase = "open"
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    census.phase = "ask"
    await communicator.send_to(text_data=json.dumps({"message": QUESTION}))
    events = await _until_done(communicator)
    for watcher in watching:
        await _until_done(watcher)
    census.phase = "close"
    await communicator.disconnect()
    census.phase = "idle"
    for watcher in watching:
        await watcher.disconnect()
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--watchers", type=int, default=0, help="other sockets watching each turn")
    options = parser.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as work, fake_llm("--tokens", "60", "--rate", "20") as llm:
        django_with_fresh_database(
            Path(work),
            OPENAI_API_KEY="bench",
            OPENAI_BASE_URL=llm,
            GLASSBOX_MODEL="bench",
            GLASSBOX_PROVIDER_RETRIES="0",
        )
        from django.conf import settings
        from django.contrib.auth.models import User
        from django.test import Client

        from chat.models import Conversation
        from project.asgi import application

        client = Client()
        client.force_login(User.objects.get(username="demo"))
        cookie = (
            f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        )
        user = User.objects.get(username="demo")
        census = Census()
        install(census)

        async def run_all() -> None:
            for turn in range(options.turns + 1):
                if turn == 1:  # the first one warms the process up
                    census.statements.clear()
                    for counter in (census.trips, census.cpu, census.runs):
                        counter.clear()
                conversation = await Conversation.objects.acreate(owner=user)
                census.last = len(census.statements)
                events = await one_turn(
                    application, census, str(conversation.pk), cookie, options.watchers
                )
                assert events[-1].get("state") == "complete", events[-1]

        asyncio.run(run_all())

    turns = options.turns
    phases = ("open", "ask", "close")
    counts = Counter(phase for phase, _ in census.statements)
    report(
        f"Database per question, the average of {turns} turns",
        [
            *(
                (
                    f"{phase}: statements / trips",
                    f"{counts[phase] / turns:.1f} / {census.trips[phase] / turns:.1f}",
                )
                for phase in phases
            ),
            (
                "whole turn: statements / trips",
                f"{sum(counts[p] for p in phases) / turns:.1f} / "
                f"{sum(census.trips[p] for p in phases) / turns:.1f}",
            ),
        ],
    )
    report(
        "The database thread's CPU per question, by what it ran (ms, and runs per question)",
        [
            (name[-52:], f"{seconds * 1000 / turns:.2f} ms  ({census.runs[name] / turns:.1f})")
            for name, seconds in sorted(census.cpu.items(), key=lambda item: -item[1])
        ]
        + [("all", f"{sum(census.cpu.values()) * 1000 / turns:.2f} ms")],
    )
    print("\n## The last turn's statements, in order")
    for phase, sql in census.statements[census.last :]:
        print(f"  {phase:<5} {sql}")


if __name__ == "__main__":
    main()
