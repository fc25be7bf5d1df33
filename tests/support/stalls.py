"""Whether the event loop stalled while something ran: another coroutine's 10 ms ticks, as
another user's work would wait. Only the longest gap is asserted, with a bound a loaded
machine's pauses stay under and a real stall breaks (no latency figures: bench/ has those)."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType


class Ticker:
    """`async with Ticker() as ticks:` … `ticks.longest` is the longest gap, in seconds."""

    def __init__(self, every: float = 0.01) -> None:
        self.every = every
        self.gaps: list[float] = []
        self._task: asyncio.Task[None] | None = None

    @property
    def longest(self) -> float:
        return max(self.gaps, default=0.0)

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(self.every)
            now = time.perf_counter()
            self.gaps.append(now - last)
            last = now

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._tick())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
