"""An MCP tool that sends 1,000 progress notifications in two seconds: what it costs in
database writes, and what it does to the first-status latency of other people's turns.

Writes are counted in this process with a wrapper around every statement (one turn with one
notification against one with 1,000); the latency is measured against a served Glassbox with
20 other clients asking at once, with and without the flood running beside them."""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path

from common import (
    ROOT,
    conversations,
    django_with_fresh_database,
    fake_llm,
    glassbox,
    machine,
    percentile,
    report,
    turn_over_socket,
)
from first_status import QUESTION, latency_ms

SERVERS = json.dumps(
    [{"name": "bench", "command": sys.executable, "args": [str(ROOT / "bench" / "mcp_server.py")]}]
)
OTHERS = 20
ROUNDS = 3


def writes_per_turn() -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as work:
        django_with_fresh_database(Path(work), GLASSBOX_MCP_SERVERS=SERVERS, OPENAI_API_KEY="")
        from asgiref.sync import async_to_sync
        from django.contrib.auth.models import User
        from django.db import connection

        from activity.models import ActivityEvent
        from chat.models import Conversation, Message
        from chat.turns.admission import admit

        user = User.objects.get(username="demo")
        rows = []
        for count in (1, 1000):
            writes: list[str] = []

            def wrapper(execute, sql, params, many, context, writes=writes):
                if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
                    writes.append(sql)
                return execute(sql, params, many, context)

            question = "bench__flood " + json.dumps({"count": count, "seconds": 2})
            conversation = Conversation.objects.create(owner=user)
            with connection.execute_wrapper(wrapper):
                turn = admit(conversation=conversation, text=question)
                async_to_sync(_run)(turn.answer)
            answer = Message.objects.get(pk=turn.answer.pk)
            result = ActivityEvent.objects.get(feed_id=answer.feed_id, kind="tool_result")
            events = ActivityEvent.objects.filter(feed_id=answer.feed_id).count()
            rows += [
                (f"{count} notifications: notifications counted", str(result.progress_count)),
                (f"{count} notifications: events stored", str(events)),
                (f"{count} notifications: database writes", str(len(writes))),
            ]
        return rows


async def _run(answer) -> None:
    """One turn in an event loop of its own, with the MCP session that loop opened."""
    from chat.agent.mcp.connections import pool
    from chat.turns import runner

    await runner.run(answer=answer)
    await pool().close()


async def first_statuses(server, ids, cookies, flood: bool) -> tuple[list[float], float]:
    latencies: list[float] = []
    flood_seconds = float("nan")

    async def flooder() -> None:
        nonlocal flood_seconds
        loop = asyncio.get_running_loop()
        started = loop.time()
        events = await turn_over_socket(server, ids[0], cookies, "flood please")
        flood_seconds = loop.time() - started
        assert events[-1][1].get("state") == "complete", events[-1]

    async def client(conversation: str) -> None:
        await asyncio.sleep(0.2 + random.random())
        for _ in range(ROUNDS):
            latencies.append(
                latency_ms(await turn_over_socket(server, conversation, cookies, QUESTION))
            )

    jobs = [client(c) for c in ids[1 : OTHERS + 1]]
    await asyncio.gather(*jobs, *([flooder()] if flood else []))
    return latencies, flood_seconds


def latency_under_flood() -> list[tuple[str, str]]:
    rows = []
    with (
        tempfile.TemporaryDirectory() as work,
        fake_llm(
            "--ttft", "0.3", "--tokens", "60", "--rate", "20", "--flood-tool", "bench__flood"
        ) as llm,
        glassbox(Path(work), llm, GLASSBOX_MCP_SERVERS=SERVERS) as server,
    ):
        ids, cookies = conversations(server, OTHERS + 1)
        asyncio.run(first_statuses(server, ids, cookies, flood=True))  # warm up (and connect)
        for flood in (False, True):
            values, seconds = asyncio.run(first_statuses(server, ids, cookies, flood))
            name = "with the flood" if flood else "alone"
            rows += [
                (
                    f"{OTHERS} others {name}: p50 first status (ms)",
                    f"{percentile(values, 50):.1f}",
                ),
                (
                    f"{OTHERS} others {name}: p99 first status (ms)",
                    f"{percentile(values, 99):.1f}",
                ),
            ]
            if flood:
                rows.append(("the flooding turn took (s)", f"{seconds:.2f}"))
    return rows


def main() -> None:
    print(f"machine: {machine()}")
    rows = writes_per_turn() + latency_under_flood()
    report("An MCP tool sending 1,000 progress notifications in 2 s", rows)


if __name__ == "__main__":
    main()
