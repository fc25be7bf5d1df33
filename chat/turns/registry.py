"""The turns this process runs, and their answer text and events ahead of what the database
holds.

Also the strong references the event loop needs: it keeps only weak ones to tasks."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from activity.models import ActivityEvent, ModelCall
from activity.recording.events import Status


class LiveText(Protocol):
    text: str


class LiveFeed(Protocol):
    pending: list[ActivityEvent]
    pending_calls: list[ModelCall]

    @property
    def last_seq(self) -> int: ...


@dataclass(frozen=True)
class Held:
    """What a released turn had that the database does not."""

    events: list[ActivityEvent]
    calls: list[ModelCall]
    text: str


_tasks: dict[int, asyncio.Task[Any]] = {}
# Turns whose owner asked them to stop, until their runner ends them. A turn's task is also
# cancelled when its event loop shuts down under it (asyncio.run's last step, a test's loop):
# the cancellation alone cannot tell the two apart, and only the owner's Stop is `stopped`.
_stops: set[int] = set()
_texts: dict[int, LiveText] = {}
_feeds: dict[int, LiveFeed] = {}
# Each running call's last progress report, by answer and call: live only, so a follower
# that joins (or resumes) while the call runs has it only from here.
_progress: dict[int, dict[str, Status]] = {}
# Set once this process is restarting: it takes no new turn (chat.turns.shutdown).
_draining = False
# Event streams (SSE) this process is writing: a restart waits for them to end too.
_streams = 0
_no_streams = asyncio.Event()
_no_streams.set()


@contextlib.contextmanager
def streaming() -> Iterator[None]:
    global _streams
    _streams += 1
    _no_streams.clear()
    try:
        yield
    finally:
        _streams -= 1
        if not _streams:
            _no_streams.set()


def streams() -> int:
    return _streams


async def streams_ended() -> None:
    await _no_streams.wait()


def start_draining() -> None:
    global _draining
    _draining = True


def draining() -> bool:
    return _draining


def launch(answer_id: int, run: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    # A context of its own: the turn outlives whoever began it, and must not inherit their
    # context (asgiref's executor of a request thread that is gone by then).
    task = asyncio.create_task(run, name=f"turn-{answer_id}", context=contextvars.Context())
    _tasks[answer_id] = task
    # A resumed turn may start before the run that paused it is quite over: each task
    # unregisters only itself.
    task.add_done_callback(lambda done: _forgotten(answer_id, done))
    return task


def _forgotten(answer_id: int, task: asyncio.Task[Any]) -> None:
    if _tasks.get(answer_id) is task:
        del _tasks[answer_id]
        _stops.discard(answer_id)


def running() -> list[int]:
    """The answers whose turns this process runs."""
    return list(_tasks)


def runs_here(answer_id: int) -> bool:
    return answer_id in _tasks


def stop(answer_id: int) -> bool:
    """Its owner's Stop: cancels the turn if this process runs it, marked as theirs (see
    `stop_asked`); False if it runs elsewhere (or nowhere)."""
    task = _tasks.get(answer_id)
    if task is None:
        return False
    stop_asked(answer_id)
    task.cancel()
    return True


def stop_asked(answer_id: int) -> None:
    """Marks the turn's coming cancellation as its owner's Stop (made here, or in another
    process and seen by the runner's heartbeat)."""
    _stops.add(answer_id)


def stopped_by_owner(answer_id: int) -> bool:
    """Whether the turn's cancellation was its owner's Stop; read once, by its runner."""
    if answer_id in _stops:
        _stops.discard(answer_id)
        return True
    return False


def text_started(answer_id: int, text: LiveText, feed: LiveFeed) -> None:
    _texts[answer_id] = text
    _feeds[answer_id] = feed


def texts_streaming() -> int:
    """How many answers this process is streaming now (its load, as text frames go)."""
    return len(_texts)


def text_finished(answer_id: int, text: LiveText | None = None) -> None:
    """The turn's text and events are all stored; with `text`, only if it is still that
    run's."""
    if text is None or _texts.get(answer_id) is text:
        _texts.pop(answer_id, None)
        _feeds.pop(answer_id, None)
        _progress.pop(answer_id, None)


def progress_shown(answer_id: int, status: Status) -> None:
    """A running call's progress report went out: the latest replaces the one before."""
    _progress.setdefault(answer_id, {})[status.call_id] = status


def progress_ended(answer_id: int, call_id: str) -> None:
    """The call has its result, which keeps its last report."""
    _progress.get(answer_id, {}).pop(call_id, None)


def progress_so_far(answer_id: int) -> list[Status]:
    """The last progress report of each call of the turn still running here."""
    return list(_progress.get(answer_id, {}).values())


def text_so_far(answer_id: int, stored: str) -> str:
    """The longer of the stored text and the text this process holds for the turn (ahead of
    the database between two saves)."""
    text = _texts.get(answer_id)
    return text.text if text is not None and len(text.text) > len(stored) else stored


def unsaved_rows(answer_id: int) -> tuple[list[ActivityEvent], int]:
    """The events of the turn this process holds ahead of the database (a commit window's
    worth), and the last seq it has numbered (0 if it runs no such turn)."""
    feed = _feeds.get(answer_id)
    return (feed.pending[:], feed.last_seq) if feed is not None else ([], 0)


def given_up(answer_id: int) -> bool:
    """Whether a runner of this process is over without writing its turn's end: the turn
    is dead, whatever its silence."""
    return answer_id not in _tasks and answer_id in _feeds and answer_id in _texts


def holds(answer_id: int) -> bool:
    """Whether this process holds any of the turn's text or events (running or given up)."""
    return answer_id in _feeds or answer_id in _texts


def given_up_with(answer_id: int) -> Held | None:
    """What this process holds of a turn whose runner is over without writing its end (its
    end's commit failed), still held: whoever closes the turn writes it, then lets go of it
    (`released`)."""
    if not given_up(answer_id):
        return None  # still running (its runner writes it), or nothing held
    feed, text = _feeds[answer_id], _texts[answer_id]
    return Held(feed.pending[:], feed.pending_calls[:], text.text)


def released(answer_id: int) -> Held | None:
    """What this process held of a turn whose runner is over without writing its end,
    taken once: nothing of it is held here after."""
    held = given_up_with(answer_id)
    if answer_id not in _tasks:
        _feeds.pop(answer_id, None)
        _texts.pop(answer_id, None)
        _progress.pop(answer_id, None)
    return held


async def finish_all() -> None:
    """Waits for every turn this process runs (tests, and a clean shutdown)."""
    while _tasks:
        await asyncio.gather(*_tasks.values(), return_exceptions=True)
        # Gathering tasks that are already done never yields, and their done callbacks (which
        # forget them) only run once the loop gets a turn.
        await asyncio.sleep(0)
