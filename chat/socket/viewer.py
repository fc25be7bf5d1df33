"""What one socket shows of one turn: the turn followed from where the client stands, through
its Wire (chat.socket.wires: fragments for the page, program frames for programs)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from activity.preferences.feed_prefs import FeedPrefs
from activity.recording.events import WireEvent
from chat import turns
from chat.models import Message
from chat.socket.wires import SocketWire, TurnWire, encoded
from project.outages import DATABASE_DOWN

logger = logging.getLogger("glassbox.sockets")


class Viewer:
    def __init__(
        self,
        *,
        answer_id: int,
        conversation_id: uuid.UUID,
        wire: TurnWire,
        after: turns.Position,
        send: Callable[[str], Awaitable[None]],
        ended: Callable[[int], object],
        failed: Callable[[], Awaitable[None]],
    ) -> None:
        self.answer_id = answer_id
        self.wire = wire
        self.send = send
        self.ended = ended
        self.failed = failed
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        events = turns.follow_turn(
            answer_id, self.inbox, conversation_id=conversation_id, after=after
        )
        self.task = asyncio.create_task(self._show_all(events))
        self.timer: asyncio.Task[None] | None = None
        if (after_seconds := wire.draft_after()) is not None:
            self.timer = asyncio.create_task(self._draft_later(after_seconds))

    def deliver(self, message: dict[str, Any]) -> None:
        """A group message about this turn; shown in order by this viewer's task."""
        self.inbox.put_nowait(message)

    def close(self) -> None:
        for task in (self.task, self.timer):
            if task is not None and task is not asyncio.current_task():
                task.cancel()

    async def _show_all(self, events: Any) -> None:
        try:
            async for event in events:
                await self._show(event)
        except Exception as problem:
            # The socket closes as a server error, for its client to reconnect, instead of
            # showing a turn that runs on for ever. A follower that gave up (the database
            # away for longer than a turn may run) has logged why already.
            away = isinstance(problem, DATABASE_DOWN)
            logger.log(
                logging.WARNING if away else logging.ERROR,
                "a socket could not %s turn %s; it closes for its client to reconnect",
                "follow" if away else "show",
                self.answer_id,
                exc_info=None if away else problem,
            )
            await self.failed()
        finally:
            self.ended(self.answer_id)
            if self.timer is not None:
                self.timer.cancel()

    async def _show(self, event: WireEvent) -> None:
        for frame in self.wire.frames(event):
            await self.send(await encoded(self.wire, frame))

    async def _draft_later(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        for frame in self.wire.tick():
            await self.send(await encoded(self.wire, frame))


class Screen:
    """Every turn one socket shows, one Viewer each, by answer id."""

    def __init__(
        self,
        *,
        conversation_id: uuid.UUID,
        send: Callable[[str], Awaitable[None]],
        wire: SocketWire,
        failed: Callable[[], Awaitable[None]],
    ) -> None:
        self.conversation_id = conversation_id
        self.send = send
        self.wire = wire
        self.failed = failed
        self.viewers: dict[int, Viewer] = {}
        # Whether the socket stopped showing: a turn whose start or snapshot was on its way
        # then is not followed.
        self.closed = False

    def shows(self, answer_id: int) -> bool:
        return answer_id in self.viewers

    async def started(
        self,
        message: dict[str, Any],
        user_id: int,
        prefs: FeedPrefs,
        guard: Callable[[], None] | None = None,
    ) -> FeedPrefs:
        """A turn of this conversation began: the client is shown its start, and the turn is
        followed from there. Returns the viewer's preferences, read again with the turn.
        `guard` runs first, in the same trip to the database: whatever it raises shows
        nothing."""
        answer_id = message["answer_id"]
        if self.shows(answer_id):
            return prefs  # already in this socket's snapshot
        sent, prefs = await self.wire.started(message, user_id, prefs, guard)
        for text in sent:
            await self.send(text)
        wire = self.wire.turn(answer_id, prefs, message.get("language", ""))
        self._view(answer_id, wire, turns.Position())
        return prefs

    async def join(self, answer_id: int, prefs: FeedPrefs) -> None:
        """A turn the client may not have seen to its end: shown as it stands, then live."""
        if self.shows(answer_id):
            return
        # A program's uncut width (0) is no width for the lines the snapshot draws itself.
        drawn = dataclasses.replace(prefs, line_width=prefs.line_width or FeedPrefs().line_width)
        view, position = await turns.snapshot(answer_id, drawn)
        sent, wire = await self.wire.joined(answer_id, view, prefs, drawn)
        for text in sent:
            await self.send(text)
        if view.state in Message.OPEN_STATES:  # else it ended before the snapshot
            self._view(answer_id, wire, position)

    def deliver(self, message: dict[str, Any]) -> bool:
        """A turn's group message to its viewer; False if this socket does not show it."""
        viewer = self.viewers.get(message["answer_id"])
        if viewer is not None:
            viewer.deliver(message)
        return viewer is not None

    def close(self) -> None:
        """Stops every viewer; nothing delivered after is shown."""
        self.closed = True
        for viewer in self.viewers.values():
            viewer.close()
        self.viewers.clear()

    def _forget(self, answer_id: int) -> None:
        self.viewers.pop(answer_id, None)

    def _view(self, answer_id: int, wire: TurnWire, after: turns.Position) -> None:
        if self.closed:
            return
        self.viewers[answer_id] = Viewer(
            answer_id=answer_id,
            conversation_id=self.conversation_id,
            wire=wire,
            after=after,
            send=self.send,
            ended=self._forget,
            failed=self.failed,
        )
