"""A turn for a program: its JSON events over server-sent events, followed through the
conversation's group like any socket, so browser tabs watch an API-started turn live. The
steps every stream takes (stored events, then live ones, through its Wire, less what a
resuming client has) and its refusal's text are here once, for the standard streams too
(chat.api.standard_streams)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from activity.recording.events import Decision, Done, Status, WireEvent
from chat import turns
from chat.models import Conversation, Message
from chat.turns import registry
from chat.turns.wires import Cursor, Frame, ProgramWire, Resume, Wire


@dataclass(frozen=True, slots=True)
class Stored:
    """A replayed event's place in what was stored when the stream began."""

    state: str  # the answer's, as Message.State
    later: list[WireEvent]


async def turn_events(
    conversation: Conversation, turn: turns.StartedTurn
) -> AsyncIterator[WireEvent]:
    """The turn's events from `turn` to `done`, whether it was begun here or joined."""
    with registry.streaming():
        async for event in _events(conversation, turn):
            yield event


class ProgramSseWire(ProgramWire):
    """The program frames of the `glassbox.json` socket, as `event:`/`data:` lines."""

    def encode(self, frame: Frame) -> str:
        return sse(frame.payload)


async def wire_stream(
    conversation: Conversation, answer_id: int, wire: Wire, after: Cursor | None
) -> AsyncIterator[str]:
    """The turn of `answer_id` through `wire`, from its start or from `after`, then the
    wire's closing line."""
    out = _Output(wire, after)
    with registry.streaming():
        async with contextlib.aclosing(stored_then_live(conversation, answer_id)) as events:
            async for event, stored in events:
                # A turn that waits holds no process: a run that ends there ends, the next
                # carries on. A stored wait counts only if the turn still waits and nobody
                # decided it since.
                waiting = waiting_of(event) if wire.ends_at_wait else None
                waits = waiting is not None and (
                    stored is None
                    or (
                        stored.state == Message.State.WAITING
                        and not _decided(waiting, stored.later)
                    )
                )
                interrupt = wire.interrupt(waiting) if waiting is not None and waits else ()
                for line in out.send(wire.frames(event), interrupt):
                    yield line
                if waits or isinstance(event, Done):
                    break
    if wire.closing:
        yield wire.closing


class _Output:
    """Frames as the wire's text, less what a resuming client has (wires.Resume)."""

    def __init__(self, wire: Wire, after: Cursor | None) -> None:
        self.wire = wire
        self.resume = Resume(after, wire.rebuild)

    def send(self, *batches: Iterable[Frame]) -> Iterator[str]:
        for batch in batches:
            for frame in self.resume.frames(batch):
                yield self.wire.encode(frame)


def waiting_of(event: WireEvent) -> Status | None:
    """The status of a call that waits for its owner's decision, if the event is one."""
    match event:
        case Status(state="waiting"):
            return event
        case _:
            return None


def _decided(waiting: Status, later: list[WireEvent]) -> bool:
    return any(isinstance(e, Decision) and e.call_id == waiting.call_id for e in later)


async def _events(conversation: Conversation, turn: turns.StartedTurn) -> AsyncIterator[WireEvent]:
    async with contextlib.aclosing(stored_then_live(conversation, turn.answer.pk)) as events:
        async for event, _stored in events:
            yield event


async def stored_then_live(
    conversation: Conversation, answer_id: int
) -> AsyncGenerator[tuple[WireEvent, Stored | None]]:
    """Every stream's steps: the turn's stored events (each with its `Stored` place), then
    its live ones (with None), up to `done`. Close it with contextlib.aclosing: it holds the
    conversation's subscription."""
    async with turns.subscribe(conversation.group_name) as inbox:
        # Subscribed first, then read: nothing falls between the snapshot and the stream.
        view, position = await turns.snapshot(answer_id)
        replayed = turns.replay(view)
        for index, event in enumerate(replayed):
            yield event, Stored(view.state, replayed[index + 1 :])
            if isinstance(event, Done):
                return
        async for event in turns.follow_turn(
            answer_id, inbox, conversation_id=conversation.pk, after=position
        ):
            yield event, None


def first_error(data: Any) -> str:
    """The message of a DRF error body: {"detail": …} or {"field": ["…"]}, for the one error
    event a refused stream sends."""
    while data and isinstance(data, dict | list):
        if isinstance(data, list):
            data = data[0]
        else:
            data = data.get("detail") or next(iter(data.values()))
    return str(data or "")


def sse(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
