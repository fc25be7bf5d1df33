"""What a socket speaks, chosen once by its subprotocol: HTML fragments for htmx's ws extension
(`PageWire`), or program frames with `glassbox.json` (`ProgramSocketWire`). Each gives every
turn the socket shows a `Wire` (chat.turns.wires, the protocol the API's streams use too), and
says how the rest is sent: a turn's start, a turn joined midway, notices, question cards,
the sidebar's cue and a refused edit."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.live import LivePresenter
from activity.presenting.live_markdown import split_settled
from activity.recording.events import Decision, Done, Error, Status, TurnStarted, WireEvent
from chat import turns
from chat.asks.cards import refused_card, waiting_card
from chat.asks.question_cards import QuestionCard
from chat.conversations.selectors import TurnView, aturn_view
from chat.models import Message
from chat.socket import reads, render
from chat.turns import actions
from chat.turns.wires import Frame, Numbering, ProgramWire, Wire

JSON_PROTOCOL = "glassbox.json"

# A page's frame that reads the database first (the answer as stored, a waiting call's card):
# awaited by the socket just before it is sent, in its place among the others.
Later = Callable[[], Awaitable[str]]


class TurnWire(Wire, Protocol):
    """A turn on a socket: a Wire, and the draft a page shows when the turn is slow."""

    def draft_after(self) -> float | None:
        """Seconds after which `tick` is due, or None."""
        ...

    def tick(self) -> Iterator[Frame]: ...


async def encoded(wire: Wire, frame: Frame) -> str:
    """The frame's text, once what it reads has been read."""
    if callable(frame.payload):
        frame.payload = await frame.payload()
    return wire.encode(frame)


class SocketWire(Protocol):
    # The subprotocol the socket accepts with, and whose feed settings it shows turns by.
    subprotocol: str | None
    surface: str
    # The cue that another of the user's conversations changed ('' sends nothing).
    sidebar_stale: str

    def turn(self, answer_id: int, prefs: FeedPrefs, language: str) -> TurnWire:
        """A turn that began while the socket was open, followed from its start."""
        ...

    async def started(
        self,
        message: dict[str, Any],
        user_id: int,
        prefs: FeedPrefs,
        guard: Callable[[], None] | None,
    ) -> tuple[list[str], FeedPrefs]:
        """What a new turn's start sends, and the preferences its turn is shown by. `guard`
        runs first, in the same trip to the database: whatever it raises shows nothing."""
        ...

    async def joined(
        self, answer_id: int, view: TurnView, prefs: FeedPrefs, drawn: FeedPrefs
    ) -> tuple[list[str], TurnWire]:
        """A turn joined as it stands in `view` (snapshot drawn by `drawn`): what shows it
        so far, and the Wire for the rest."""
        ...

    def notice(self, text: str) -> str: ...

    def questions(self, conversation_id: uuid.UUID, shown: list[QuestionCard]) -> str: ...

    async def edit_refused(
        self, conversation_id: uuid.UUID, request: actions.Decide, refusal: turns.EditRefused
    ) -> str:
        """What follows the notice of an edit refused ('' nothing)."""
        ...


def wire_for(scope: Any) -> SocketWire:
    """Programs ask for JSON events with the `glassbox.json` subprotocol."""
    if JSON_PROTOCOL in scope.get("subprotocols", []):
        return ProgramSocketWire()
    return PageWire()


class PageTurnWire:
    """A turn on the page: the live feed's operations (activity.presenting.live) as
    fragments, a waiting call's card, and the answer as stored once it is done."""

    ends_at_wait = False
    closing = ""
    rebuild = None

    def __init__(self, presenter: LivePresenter, prefs: FeedPrefs) -> None:
        self.presenter = presenter
        self.prefs = prefs
        self.at = Numbering()

    def frames(self, event: WireEvent) -> Iterator[Frame]:
        self.at.at_event(event)
        answer_id = self.presenter.turn_id
        ops = (
            self.presenter.finish() if isinstance(event, Done) else self.presenter.on_event(event)
        )
        if ops:
            yield self.at.frame(render.live_ops(answer_id, ops), [])
        match event:
            case Done():
                yield self._later(self._answer, terminal=True)
            case Decision():
                # A decision takes the card away.
                yield self.at.frame(render.approval_card(answer_id, None), [])
            case Status(state="waiting"):
                # Read after the pause stored it, before its line was sent.
                yield self._later(self._card)
            case _:
                pass

    def interrupt(self, waiting: Status) -> Iterator[Frame]:
        return iter(())

    def encode(self, frame: Frame) -> str:
        return str(frame.payload)

    def draft_after(self) -> float | None:
        shown = self.presenter.draft_shown
        return self.prefs.show_after if self.prefs.mode == "progress" and not shown else None

    def tick(self) -> Iterator[Frame]:
        if ops := self.presenter.tick():
            yield self.at.frame(render.live_ops(self.presenter.turn_id, ops), [])

    def _later(self, read: Later, *, terminal: bool = False) -> Frame:
        return self.at.frame(read, [], terminal=terminal)

    async def _answer(self) -> str:
        return render.assistant_message(await aturn_view(self.presenter.turn_id, self.prefs))

    async def _card(self) -> str:
        answer_id = self.presenter.turn_id
        card = await database_sync_to_async(waiting_card)(answer_id)
        return render.approval_card(answer_id, card)


def presenter_after(view: TurnView, prefs: FeedPrefs) -> LivePresenter:
    """A presenter for a turn shown from a snapshot: what it holds counts as shown."""
    language = view.feed.language if view.feed is not None else ""
    presenter = LivePresenter(prefs, view.pk, draft_shown=True, language=language)
    presenter.tail = split_settled(view.content)[1]  # the snapshot rendered the rest
    presenter.shown.extend(line.key for line in view.lines)
    for event in view.events:
        presenter.on_event(event)
    return presenter


class PageWire:
    subprotocol: str | None = None
    surface = "page"
    sidebar_stale = render.SIDEBAR_STALE

    def turn(self, answer_id: int, prefs: FeedPrefs, language: str) -> TurnWire:
        return PageTurnWire(LivePresenter(prefs, answer_id, language=language), prefs)

    async def started(
        self,
        message: dict[str, Any],
        user_id: int,
        prefs: FeedPrefs,
        guard: Callable[[], None] | None,
    ) -> tuple[list[str], FeedPrefs]:
        """The question and its (empty) answer, or the new answer in place of the one it
        replaces."""
        question, answer, prefs = await reads.new_turn(
            message["question_id"], message["answer_id"], user_id, guard
        )
        if message.get("replaces"):
            earlier = await turns.snapshot(message["replaces"], prefs)
            return [render.regenerated(question, earlier[0], answer)], prefs
        return [render.started(question, answer)], prefs

    async def joined(
        self, answer_id: int, view: TurnView, prefs: FeedPrefs, drawn: FeedPrefs
    ) -> tuple[list[str], TurnWire]:
        sent = [render.assistant_message(view)]
        if view.state == Message.State.WAITING:
            card = await database_sync_to_async(waiting_card)(answer_id)
            sent.append(render.approval_card(answer_id, card))
        return sent, PageTurnWire(presenter_after(view, drawn), drawn)

    def notice(self, text: str) -> str:
        return render.notice(text)

    def questions(self, conversation_id: uuid.UUID, shown: list[QuestionCard]) -> str:
        """One fragment that replaces the page's `#questions`, so a second device, a reload
        and a change all show the record as it is."""
        return render_to_string(
            "chat/_questions.html",
            {"questions": shown, "conversation_id": conversation_id, "oob": True},
        )

    async def edit_refused(
        self, conversation_id: uuid.UUID, request: actions.Decide, refusal: turns.EditRefused
    ) -> str:
        """The card back as the owner left it, the reason under the field at fault."""
        card = await database_sync_to_async(refused_card)(
            conversation_id, request.call_id, request.edits, refusal
        )
        return render.approval_card(card.answer_id, card) if card is not None else ""


class ProgramSocketWire:
    subprotocol: str | None = JSON_PROTOCOL
    # A program's socket shows turns by the user's settings for programs.
    surface = "program"
    # A program keeps its own list of conversations.
    sidebar_stale = ""

    def turn(self, answer_id: int, prefs: FeedPrefs, language: str) -> TurnWire:
        return ProgramTurnWire(prefs, answer_id, language)

    async def started(
        self,
        message: dict[str, Any],
        user_id: int,
        prefs: FeedPrefs,
        guard: Callable[[], None] | None,
    ) -> tuple[list[str], FeedPrefs]:
        """The `turn` frame: the ids say it all, nothing to read but the guard's check."""
        if guard is not None:
            await database_sync_to_async(guard)()
        replaces = message.get("replaces")
        started = TurnStarted(
            str(message["question_id"]), str(message["answer_id"]), str(replaces or "")
        )
        return [render.as_json_event(started)], prefs

    async def joined(
        self, answer_id: int, view: TurnView, prefs: FeedPrefs, drawn: FeedPrefs
    ) -> tuple[list[str], TurnWire]:
        """The turn's events so far through the Wire that then carries on live."""
        language = view.feed.language if view.feed is not None else ""
        wire = ProgramTurnWire(prefs, answer_id, language)
        sent = [wire.encode(frame) for event in turns.replay(view) for frame in wire.frames(event)]
        return sent, wire

    def notice(self, text: str) -> str:
        return render.as_json_event(Error(text))

    def questions(self, conversation_id: uuid.UUID, shown: list[QuestionCard]) -> str:
        return render.json_frame({"type": "questions", "questions": [c.to_json() for c in shown]})

    async def edit_refused(
        self, conversation_id: uuid.UUID, request: actions.Decide, refusal: turns.EditRefused
    ) -> str:
        return ""  # the notice says it all


class ProgramTurnWire(ProgramWire):
    def draft_after(self) -> float | None:
        return None  # a program's `label` comes with the turn's first work

    def tick(self) -> Iterator[Frame]:
        return iter(())
