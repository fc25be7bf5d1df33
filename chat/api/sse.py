"""A turn for a program: its JSON events over server-sent events, followed through the
conversation's group like any socket, so browser tabs watch an API-started turn live."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.program_frames import ProgramFrames
from chat import turns
from chat.models import Conversation
from chat.turns import registry


async def turn_events(
    conversation: Conversation, turn: turns.StartedTurn
) -> AsyncIterator[dict[str, Any]]:
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


async def _events(
    conversation: Conversation, turn: turns.StartedTurn
) -> AsyncIterator[dict[str, Any]]:
    async with turns.subscribe(conversation.group_name) as inbox:
        # Subscribed first, then read: nothing falls between the snapshot and the stream.
        view, position = await turns.snapshot(turn.answer.pk)
        for event in turns.replay(view):
            yield event
            if event["type"] == "done":
                return
        async for event in turns.follow_turn(
            turn.answer.pk, inbox, conversation_id=conversation.pk, after=position
        ):
            yield event


def sse(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
