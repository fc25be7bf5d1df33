"""A socket's periodic work (its check of its right) runs beside its messages: a question
that arrives while the check waits is handled at once, and what the check finds is handled
after it, in order (chat.socket.dispatch.Clock)."""

from __future__ import annotations

import asyncio
import contextlib

from channels.exceptions import StopConsumer

from chat.socket.dispatch import Clock, dispatch_all


def test_a_message_arriving_while_the_clocks_work_waits_is_handled_at_once_and_its_finding_after():
    async def scenario() -> list[str]:
        handled: list[str] = []
        client: asyncio.Queue[dict] = asyncio.Queue()
        checking, finding = asyncio.Event(), asyncio.Event()

        async def check() -> dict | None:
            checking.set()
            await finding.wait()  # as a check waiting for others to share its trip
            return {"type": "found"}

        async def dispatch(message: dict) -> None:
            handled.append(message["type"])
            if message["type"] == "question":
                finding.set()
            if message["type"] == "found":
                raise StopConsumer

        runs = asyncio.create_task(
            dispatch_all(
                client=client.get,
                layer=None,
                dispatch=dispatch,
                direct=lambda message: False,
                clock=Clock(lambda: 0.01, check),
            )
        )
        await asyncio.wait_for(checking.wait(), 5)
        await client.put({"type": "question"})
        async with asyncio.timeout(5):
            with contextlib.suppress(StopConsumer):
                await runs
        return handled

    assert asyncio.run(scenario()) == ["question", "found"]
