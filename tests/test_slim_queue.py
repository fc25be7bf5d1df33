"""The slim queue every open socket keeps (project.queues) loses nothing and keeps order:
as asyncio.Queue for the operations the sockets and the layers use."""

from __future__ import annotations

import asyncio

import pytest

from project.queues import SlimQueue


@pytest.mark.asyncio
async def test_a_waiting_reader_gets_each_item_in_order():
    queue: SlimQueue[int] = SlimQueue()
    reader = asyncio.gather(queue.get(), queue.get())
    await asyncio.sleep(0)
    queue.put_nowait(1)
    queue.put_nowait(2)
    assert await reader == [1, 2]
    assert queue.empty() and queue.qsize() == 0


@pytest.mark.asyncio
async def test_an_item_woken_for_a_reader_cancelled_before_it_took_it_goes_to_the_next():
    queue: SlimQueue[str] = SlimQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put_nowait("only")
    first.cancel()  # woken, not yet run
    assert await asyncio.wait_for(second, 1) == "only"
    assert first.cancelled()


@pytest.mark.asyncio
async def test_a_full_queue_refuses_more_and_an_empty_one_has_nothing_to_give():
    queue: SlimQueue[int] = SlimQueue(maxsize=2)
    queue.put_nowait(1)
    queue.put_nowait(2)
    assert queue.full()
    with pytest.raises(asyncio.QueueFull):
        queue.put_nowait(3)
    assert [queue.get_nowait(), queue.get_nowait()] == [1, 2]
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()
