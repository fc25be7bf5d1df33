"""A queue for what every open socket keeps as long as it is open.

An asyncio.Queue is four deques and an Event, about 3 KiB before it holds anything, and each
socket kept three: its inbox (chat.socket.dispatch) and its channel's queue in the layer
(project.layers), besides Daphne's own. At 5,000 quiet sockets that was a tenth of their
memory (bench/quiet_sockets.py). This one keeps a list and, only while someone waits, the
waiters: about 200 bytes."""

from __future__ import annotations

import asyncio


class SlimQueue[T]:
    """asyncio.Queue's put_nowait, get, get_nowait, empty, qsize and full (no task_done,
    no waiting put: whoever puts drops what does not fit). Items are kept in a list: its
    first item is `_queue[0]`, as in the deque channels' in-memory layer reads expiries
    from; a queue holds at most its capacity (a hundred), so taking from the front is
    cheap."""

    __slots__ = ("_getters", "_queue", "maxsize")

    def __init__(self, maxsize: int = 0) -> None:
        self.maxsize = maxsize
        self._queue: list[T] = []
        self._getters: list[asyncio.Future[None]] | None = None

    def qsize(self) -> int:
        return len(self._queue)

    def empty(self) -> bool:
        return not self._queue

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._queue)

    def put_nowait(self, item: T) -> None:
        if self.full():
            raise asyncio.QueueFull
        self._queue.append(item)
        self._wake_one()

    def get_nowait(self) -> T:
        if not self._queue:
            raise asyncio.QueueEmpty
        return self._queue.pop(0)

    async def get(self) -> T:
        while not self._queue:
            waiter = asyncio.get_running_loop().create_future()
            if self._getters is None:
                self._getters = []
            self._getters.append(waiter)
            try:
                await waiter
            except BaseException:
                waiter.cancel()
                if waiter in self._getters:
                    self._getters.remove(waiter)
                # Woken, then cancelled before taking: the item is the next waiter's.
                if self._queue:
                    self._wake_one()
                raise
        return self._queue.pop(0)

    def _wake_one(self) -> None:
        getters = self._getters
        while getters:
            waiter = getters.pop(0)
            if not waiter.done():
                waiter.set_result(None)
                break
        if getters is not None and not getters:
            self._getters = None
