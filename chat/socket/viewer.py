"""What one socket shows of one turn: the turn followed from where the page stands, through
this viewer's presenter (its feed preferences) to fragments or JSON."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.live import LivePresenter
from activity.presenting.live_markdown import split_settled
from activity.presenting.program_frames import ProgramFrames
from activity.recording.events import Decision, Done, Status, TurnStarted, WireEvent
from chat import turns
from chat.asks.cards import waiting_card
from chat.conversations.selectors import TurnView, aturn_view
from chat.models import Message
from chat.socket import reads, render


def presenter_after(view: TurnView, prefs: FeedPrefs) -> LivePresenter:
    """A presenter for a turn shown from a snapshot: what it holds counts as shown."""
    language = view.feed.language if view.feed is not None else ""
    presenter = LivePresenter(prefs, view.pk, draft_shown=True, language=language)
    presenter.tail = split_settled(view.content)[1]  # the snapshot rendered the rest
    presenter.shown.extend(line.key for line in view.lines)
    for event in view.events:
        presenter.on_event(event)
    return presenter


class Viewer:
    def __init__(
        self,
        *,
        answer_id: int,
        conversation_id: uuid.UUID,
        prefs: FeedPrefs,
        presenter: LivePresenter,
        after: turns.Position,
        send: Callable[[str], Awaitable[None]],
        wants_json: bool,
        ended: Callable[[int], object],
        program: ProgramFrames | None = None,
    ) -> None:
        self.answer_id = answer_id
        self.prefs = prefs
        self.presenter = presenter
        self.send = send
        self.wants_json = wants_json
        # What a program is sent, by its `program` settings (the socket's prefs then).
        self.program = program or ProgramFrames(prefs, answer_id, presenter.language)
        self.ended = ended
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        events = turns.follow_turn(
            answer_id, self.inbox, conversation_id=conversation_id, after=after
        )
        self.task = asyncio.create_task(self._show_all(events))
        self.timer: asyncio.Task[None] | None = None
        if prefs.mode == "progress" and not presenter.draft_shown and not wants_json:
            self.timer = asyncio.create_task(self._draft_later())

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
        finally:
            self.ended(self.answer_id)
            if self.timer is not None:
                self.timer.cancel()

    async def _show(self, event: WireEvent) -> None:
        if self.wants_json:
            for frame in self.program.frames(event):
                await self.send(render.json_frame(frame))
        elif isinstance(event, Done):
            if ops := self.presenter.finish():
                await self.send(render.live_ops(self.answer_id, ops))
            await self.send(render.assistant_message(await aturn_view(self.answer_id, self.prefs)))
        else:
            if ops := self.presenter.on_event(event):
                await self.send(render.live_ops(self.answer_id, ops))
            if card := await self._approval_card(event):
                await self.send(card)

    async def _approval_card(self, event: WireEvent) -> str:
        """A call that waits shows its card (read after the pause stored it, before its line
        was sent); a decision takes it away."""
        match event:
            case Decision():
                return render.approval_card(self.answer_id, None)
            case Status(state="waiting"):
                card = await database_sync_to_async(waiting_card)(self.answer_id)
                return render.approval_card(self.answer_id, card)
            case _:
                return ""

    async def _draft_later(self) -> None:
        await asyncio.sleep(self.prefs.show_after)
        if ops := self.presenter.tick():
            await self.send(render.live_ops(self.answer_id, ops))


class Screen:
    """Every turn one socket shows, one Viewer each, by answer id."""

    def __init__(
        self,
        *,
        conversation_id: uuid.UUID,
        send: Callable[[str], Awaitable[None]],
        wants_json: bool,
    ) -> None:
        self.conversation_id = conversation_id
        self.send = send
        self.wants_json = wants_json
        self.viewers: dict[int, Viewer] = {}

    def shows(self, answer_id: int) -> bool:
        return answer_id in self.viewers

    def start(self, answer_id: int, prefs: FeedPrefs, language: str = "") -> None:
        """A turn that began while the socket was open: followed from its start, its own
        lines in the feed's `language`."""
        presenter = LivePresenter(prefs, answer_id, language=language)
        self._view(answer_id, prefs, presenter, turns.Position(), None)

    async def started(
        self,
        message: dict[str, Any],
        user_id: int,
        prefs: FeedPrefs,
        guard: Callable[[], None] | None = None,
    ) -> FeedPrefs:
        """A turn of this conversation began: the page gets its question and its (empty)
        answer, or a program their ids, and the turn is followed from its start. Returns
        the viewer's preferences, read again with the turn. `guard` runs first, in the same
        trip to the database: whatever it raises shows nothing."""
        answer_id = message["answer_id"]
        if self.shows(answer_id):
            return prefs  # already in this socket's snapshot
        if self.wants_json:  # the ids say it all: nothing to read but the guard's check
            if guard is not None:
                await database_sync_to_async(guard)()
            replaces = message.get("replaces")
            started = TurnStarted(
                str(message["question_id"]), str(answer_id), str(replaces) if replaces else ""
            )
            await self.send(render.as_json_event(started))
        else:
            question, answer, prefs = await reads.new_turn(
                message["question_id"], answer_id, user_id, guard
            )
            if message.get("replaces"):
                earlier = await turns.snapshot(message["replaces"], prefs)
                await self.send(render.regenerated(question, earlier[0], answer))
            else:
                await self.send(render.started(question, answer))
        self.start(answer_id, prefs, message.get("language", ""))
        return prefs

    async def join(self, answer_id: int, prefs: FeedPrefs) -> None:
        """A turn the page may not have seen to its end: shown as it stands, then live."""
        if self.shows(answer_id):
            return
        # A program's uncut width (0) is no width for the lines the snapshot draws itself.
        drawn = dataclasses.replace(prefs, line_width=prefs.line_width or FeedPrefs().line_width)
        view, position = await turns.snapshot(answer_id, drawn)
        program = None
        if not self.wants_json:
            await self.send(render.assistant_message(view))
            if view.state == Message.State.WAITING:
                card = await database_sync_to_async(waiting_card)(answer_id)
                await self.send(render.approval_card(answer_id, card))
        else:
            language = view.feed.language if view.feed is not None else ""
            program = ProgramFrames(prefs, answer_id, language)
            for event in turns.replay(view):
                for frame in program.frames(event):
                    await self.send(render.json_frame(frame))
        if view.state in Message.OPEN_STATES:  # else it ended before the snapshot
            self._view(answer_id, drawn, presenter_after(view, drawn), position, program)

    def deliver(self, message: dict[str, Any]) -> bool:
        """A turn's group message to its viewer; False if this socket does not show it."""
        viewer = self.viewers.get(message["answer_id"])
        if viewer is not None:
            viewer.deliver(message)
        return viewer is not None

    def close(self) -> None:
        """Stops every viewer; nothing delivered after is shown."""
        for viewer in self.viewers.values():
            viewer.close()
        self.viewers.clear()

    def _forget(self, answer_id: int) -> None:
        self.viewers.pop(answer_id, None)

    def _view(
        self,
        answer_id: int,
        prefs: FeedPrefs,
        presenter: LivePresenter,
        after: turns.Position,
        program: ProgramFrames | None,
    ) -> None:
        self.viewers[answer_id] = Viewer(
            answer_id=answer_id,
            conversation_id=self.conversation_id,
            prefs=prefs,
            presenter=presenter,
            after=after,
            send=self.send,
            wants_json=self.wants_json,
            ended=self._forget,
            program=program,
        )
