"""The periodic checks of quiet sockets' rights, made together: the checks asked within a
quarter of a second take one trip to the database thread.

Each socket checks its right again every 30 to 60 s (chat.socket.guard), so 5,000 quiet
sockets made 111 trips a second, each with its own hop to the thread and its connection's
upkeep: half of a quiet socket's CPU, and every new turn's admission queued in that same
thread behind them (first status p99 83 ms on 5,000 idle sockets, 24 ms with the checks off;
bench/quiet_sockets.py). A check a socket makes as it receives something stays its own, at
once, and the clock's checks are made beside the socket's messages, holding up none of them
(chat.socket.dispatch.Clock). A check the database could not answer closes nothing: it is
made again next time, and before the socket shows anything new."""

from __future__ import annotations

import asyncio
import logging
import weakref

from channels.db import database_sync_to_async
from django.conf import settings

from chat.socket.reads import NotAllowed, Permit

logger = logging.getLogger("glassbox.sockets")

# How long a periodic check waits for others to share its trip (at most a quarter of the
# checks' period); a few hundred at most go together, the rest with the next window.
WINDOW_SECONDS = 0.25
MOST = 500


class Rechecks:
    """The checks of one event loop waiting for their trip; its task runs while any waits."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Permit, asyncio.Future[None]]] = []
        self.task: asyncio.Task[None] | None = None
        self.trips = 0

    async def check(self, permit: Permit) -> None:
        """Raises as `permit.check` would (NotAllowed when the right is gone), after at
        most the window and one trip shared with the other checks asked meanwhile."""
        outcome: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append((permit, outcome))
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run(), name="socket-rechecks")
        await outcome

    async def _run(self) -> None:
        batch: list[tuple[Permit, asyncio.Future[None]]] = []
        try:
            while self.waiting:
                await asyncio.sleep(
                    min(WINDOW_SECONDS, settings.GLASSBOX_SOCKET_RECHECK_SECONDS / 4)
                )
                batch, self.waiting = self.waiting[:MOST], self.waiting[MOST:]
                await self._trip(batch)
                batch = []
        except asyncio.CancelledError:  # the loop closing: nobody is left to answer
            for _, outcome in batch + self.waiting:
                outcome.cancel()
            raise

    async def _trip(self, batch: list[tuple[Permit, asyncio.Future[None]]]) -> None:
        self.trips += 1
        try:
            failures = await database_sync_to_async(_check_all)([p for p, _ in batch])
        except Exception as failed:  # the trip itself failed: each check did
            failures = [failed] * len(batch)
        unmade = [f for f in failures if f is not None and not isinstance(f, NotAllowed)]
        if unmade:
            logger.warning(
                "%d sockets' periodic checks could not be made (%s); each is made again at "
                "its next one, and before the socket shows anything new",
                len(unmade),
                type(unmade[0]).__name__,
            )
        for (_, outcome), failure in zip(batch, failures, strict=True):
            if outcome.done():  # its socket closed meanwhile
                continue
            if failure is None:
                outcome.set_result(None)
            else:
                outcome.set_exception(failure)


def _check_all(permits: list[Permit]) -> list[BaseException | None]:
    """Each permit's refusal, or None; past a check that failed otherwise (the database out
    of reach), the rest are not tried on the same broken connection: they fail alike."""
    failures: list[BaseException | None] = []
    for permit in permits:
        try:
            permit.check()
        except NotAllowed as refused:
            failures.append(refused)
        except Exception as failure:
            return failures + [failure] * (len(permits) - len(failures))
        else:
            failures.append(None)
    return failures


_of_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Rechecks] = (
    weakref.WeakKeyDictionary()
)


def rechecks() -> Rechecks:
    """This event loop's checks."""
    loop = asyncio.get_running_loop()
    if loop not in _of_loop:
        _of_loop[loop] = Rechecks()
    return _of_loop[loop]
