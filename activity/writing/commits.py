"""The group commit: one writer per process (per event loop) that writes what every running
turn has pending (its events, its requests to the model, its answer text) in one transaction,
one trip to the database thread, every GLASSBOX_COMMIT_SECONDS, as databases do for their
logs. A turn that needs its rows on disk now (a tool call before its tool runs, a pause, its
end) asks for a commit at once; whatever the other turns have pending rides along.

If that one transaction fails, each turn's part is tried in a transaction of its own, so one
turn's bad write never holds back another's; what could not be written stays pending.

A commit takes the shares of the turns that said they have something new (`touch`) and of
those waiting for a write, not of every running turn: each turn's write-ahead wakes the
writer at once, so asking all of them made a turn's writes cost in proportion to the turns
running beside it (py-spy, 100 to 300 sessions arriving over seconds)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import InterfaceError, OperationalError, models, transaction

from activity.models import ActivityFeed
from project.sql import insert_rows, update_rows

logger = logging.getLogger("glassbox.activity")


@dataclass(slots=True)
class Ride:
    """A row a turn keeps up to date (its answer text): the latest values, written with the
    next commit; `written` runs once they are on disk."""

    model: type[models.Model]
    pk: Any
    values: dict[str, Any]
    written: Callable[[], None]


class Member(Protocol):
    """What the group commit needs of a turn's recorder (activity.writing.recorder's
    FeedRecorder), declared here so the commit knows no recorder."""

    feed: ActivityFeed

    def take(self) -> Part:
        """Its pending share, handed over: the recorder starts a new one. Asked only of a
        member that touched the writer since its last share was taken, or that asked for a
        write."""

    def written(self, part: Part) -> None:
        """Told once its share is on disk."""


class Rider(Protocol):
    def ride(self) -> Ride | None:
        """What to write with the next commit, if anything changed since the last."""


@dataclass(slots=True)
class Request:
    """A write someone waits for: `also` runs in the same transaction."""

    also: Callable[[], Any] | None
    future: asyncio.Future[Any]


@dataclass(slots=True)
class Part:
    """One turn's share of a commit."""

    recorder: Member
    events: list[Any]
    calls: list[Any]
    reserve: int | None
    rides: list[Ride]
    requests: list[Request] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.calls or self.reserve or self.rides or self.requests)


class GroupCommit:
    """The writer of one event loop: its task runs while a turn is joined or a write waits."""

    def __init__(self) -> None:
        self.members: dict[Member, None] = {}
        # The members with something new since their share was last taken.
        self.touched: dict[Member, None] = {}
        self.requests: dict[Member, list[Request]] = {}
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.failing = False

    def join(self, recorder: Member) -> None:
        self.members[recorder] = None
        self.touched[recorder] = None  # whatever it had pending before it joined
        self._start()

    def leave(self, recorder: Member) -> None:
        self.members.pop(recorder, None)
        self.touched.pop(recorder, None)

    def touch(self, recorder: Member) -> None:
        """`recorder` has something new to write: the next commit takes its share."""
        if recorder in self.members:
            self.touched[recorder] = None

    def write(
        self, recorder: Member, also: Callable[[], Any] | None, at_once: bool
    ) -> asyncio.Future[Any]:
        future = asyncio.get_running_loop().create_future()
        # Its caller may have been cancelled meanwhile (a Stop, the heartbeat at the end):
        # a failure nobody awaits is not an error of its own.
        future.add_done_callback(_retrieved)
        self.requests.setdefault(recorder, []).append(Request(also, future))
        if at_once:
            self.wake.set()
        self._start()
        return future

    def _start(self) -> None:
        if self.task is None or self.task.done():
            # In the context of whoever starts it (a turn, which has one of its own: see
            # chat.turns.registry.launch): its trips go to the database thread that caller's
            # would, under async_to_sync too.
            self.task = asyncio.create_task(self._run(), name="group-commit")

    async def _run(self) -> None:
        parts: list[Part] = []
        try:
            while self.members or self.requests:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(settings.GLASSBOX_COMMIT_SECONDS):
                        await self.wake.wait()
                self.wake.clear()
                parts = [part for part in self._parts() if part]
                if parts:
                    await self._commit(parts)
                parts = []
        except asyncio.CancelledError:
            # A closing loop cancels every task at once, in no set order: a turn cancelled
            # first asks this writer for its end, and would wait for it forever.
            self._abandon(parts)
            raise

    def _abandon(self, taken: list[Part]) -> None:
        """Cancels every write still awaited: nobody is left to do it."""
        waiting, self.requests = self.requests, {}
        for requests in [*(part.requests for part in taken), *waiting.values()]:
            for request in requests:
                request.future.cancel()

    def _parts(self) -> list[Part]:
        requests, self.requests = self.requests, {}
        touched, self.touched = self.touched, {}
        parts = []
        for recorder in {**touched, **dict.fromkeys(requests)}:
            waiting = requests.get(recorder, [])
            try:
                part = recorder.take()
            except Exception as exc:
                # One turn's share that cannot be taken holds back no other's; what it has
                # stays pending for its next change or write.
                logger.warning(
                    "a turn's share of the group commit could not be taken", exc_info=exc
                )
                for request in waiting:
                    if not request.future.done():
                        request.future.set_exception(exc)
                continue
            part.requests = waiting
            parts.append(part)
        return parts

    async def _commit(self, parts: list[Part]) -> None:
        try:
            results = await database_sync_to_async(_write_all)(parts)
        except (OperationalError, InterfaceError) as exc:
            # The database is unreachable: every part would fail alike. Each stays pending.
            self._failed(parts, exc)
            return
        except Exception:
            logger.debug("a group commit failed; its turns are written one by one", exc_info=True)
        else:
            self._succeeded(parts, results)
            return
        for part in parts:
            try:
                results = await database_sync_to_async(_write_all)([part])
            except Exception as exc:
                self._failed([part], exc)
            else:
                self._succeeded([part], results)

    def _succeeded(self, parts: list[Part], results: list[list[Any]]) -> None:
        if self.failing:
            self.failing = False
            logger.warning("the group commit writes again")
        for part, result in zip(parts, results, strict=True):
            part.recorder.written(part)
            for ride in part.rides:
                ride.written()
            for request, value in zip(part.requests, result, strict=True):
                if not request.future.done():
                    request.future.set_result(value)

    def _failed(self, parts: list[Part], exc: Exception) -> None:
        # Told once, not every window, while the database is away.
        if not self.failing:
            self.failing = True
            logger.warning("the group commit failed; what it held stays pending", exc_info=exc)
        for part in parts:
            self.touch(part.recorder)  # tried again at the next commit
            for request in part.requests:
                if not request.future.done():
                    request.future.set_exception(exc)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


@transaction.atomic
def _write_all(parts: list[Part]) -> list[list[Any]]:
    """Every part's rows in the caller's one transaction: each model's rows in one
    statement."""
    insert_rows([row for part in parts for row in part.events])
    insert_rows([row for part in parts for row in part.calls])
    rides: dict[tuple[type[models.Model], tuple[str, ...]], list[Ride]] = {}
    for part in parts:
        for ride in part.rides:
            rides.setdefault((ride.model, tuple(ride.values)), []).append(ride)
    for (model, _names), same in rides.items():
        update_rows(model, [(ride.pk, ride.values) for ride in same])
    reserved = [
        (part.recorder.feed.pk, {"seq_reserved": part.reserve}) for part in parts if part.reserve
    ]
    if reserved:
        update_rows(ActivityFeed, reserved)
    return [
        [request.also() if request.also is not None else None for request in part.requests]
        for part in parts
    ]


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupCommit] = (
    weakref.WeakKeyDictionary()
)


def group_commit() -> GroupCommit:
    """This event loop's writer (a process has one loop; tests run several)."""
    loop = asyncio.get_running_loop()
    writer = _writers.get(loop)
    if writer is None:
        writer = _writers[loop] = GroupCommit()
    return writer
