"""A turn for a program: its JSON events over server-sent events, followed through the
conversation's group like any socket, so browser tabs watch an API-started turn live. The
steps every stream takes (stored events, then live ones) and its refusal's text are here once,
for the standard streams too (chat.api.standard_streams)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.program_frames import ProgramFrames
from activity.recording.events import Done, WireEvent
from chat import turns
from chat.models import Conversation
from chat.turns import registry


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


async def program_frames(
    conversation: Conversation, turn: turns.StartedTurn, prefs: FeedPrefs, language: str = ""
) -> AsyncIterator[dict[str, Any]]:
    """The turn as a program with these (`program` surface) settings is sent it; a label
    speaks `language` ('' keeps the active one)."""
    frames = ProgramFrames(prefs, turn.answer.pk, language)
    async for event in turn_events(conversation, turn):
        for frame in frames.frames(event):
            yield frame


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
