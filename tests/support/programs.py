"""One turn as a program receives it, over either transport a program may use."""

from __future__ import annotations

from chat.turns.registry import finish_all
from tests.support import QUESTION
from tests.support.api import ask, client_for, sse_events
from tests.support.sockets import json_turn

TRANSPORTS = ("socket", "sse")


async def program_turn(transport: str, conversation, user, question: str = QUESTION) -> list:
    """The frames of one question, from its `turn` frame to `done`."""
    if transport == "socket":
        return await json_turn(conversation, user, question)
    response = await ask(await client_for(user), conversation, content=question)
    frames = await sse_events(response)
    await finish_all()
    return frames
