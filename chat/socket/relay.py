"""Rights taken away in a process the channel layer does not reach. On the in-memory layer a
shell or `manage.py erase_user` tells nobody in the serving process: chat.socket.revocation
writes each loss down (chat.Revocation) as well, and this reads the new rows once a second
and tells this process's sockets, as Redis would have. One statement a second a process,
whatever the number of open sockets (a check of each socket every second cost 0.2 ms of a
core each, and at 300 sockets queued every turn's first statement behind them). It reads in a
thread of its own, never queueing behind (or ahead of) a turn in the database thread."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from chat.models import Revocation
from chat.socket.revocation import ACCESS_ENDED
from project.groups import group_send

logger = logging.getLogger("glassbox.sockets")

# Longer than any outage a relay rides out and reads back; rows older are deleted.
KEPT = timedelta(minutes=5)

_relays: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = (
    weakref.WeakKeyDictionary()
)


def ensure_relaying() -> None:
    """Starts this process's relay with its first socket (once per event loop)."""
    every = settings.GLASSBOX_REVOCATION_POLL_SECONDS
    if every <= 0:
        return
    loop = asyncio.get_running_loop()
    running = _relays.get(loop)
    if running is None or running.done():
        _relays[loop] = loop.create_task(_relay(every), name="revocation relay")


_reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="revocation-relay")


async def _read[T](work: Callable[..., T], *args: object) -> T:
    """`work` in the relay's own thread, on its own connection (closed after a failure, so
    the next read opens a fresh one)."""

    def run() -> T:
        close_old_connections()
        try:
            return work(*args)
        except DatabaseError:
            connection.close()
            raise

    return await asyncio.get_running_loop().run_in_executor(_reader, run)


def _newest() -> int:
    return Revocation.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def _written_since(last: int) -> list[tuple[int, str, str]]:
    rows = Revocation.objects.filter(pk__gt=last).order_by("pk")
    return list(rows.values_list("pk", "group", "reason"))


def _forget_old() -> None:
    Revocation.objects.filter(created_at__lt=timezone.now() - KEPT).delete()


async def _relay(every: float) -> None:
    last: int | None = None
    rounds = 0
    while True:
        try:
            if last is None:  # what was written before this process listened is not news
                last = await _read(_newest)
            else:
                for pk, group, reason in await _read(_written_since, last):
                    last = pk
                    await group_send(group, {"type": ACCESS_ENDED, "reason": reason})
            rounds += 1
            if rounds % 60 == 0:
                await _read(_forget_old)
        except DatabaseError:
            # The database is away: read again next time, from where this stopped.
            logger.warning("could not read revocations; trying again", exc_info=True)
        await asyncio.sleep(every)
