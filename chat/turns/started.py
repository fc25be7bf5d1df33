"""A turn begun: what admission returns and the broadcast announces."""

from __future__ import annotations

from dataclasses import dataclass

from chat.models import Message


@dataclass(frozen=True, slots=True)
class StartedTurn:
    question: Message
    answer: Message
    # True when the client_id named a turn that already existed: nothing new was started.
    joined: bool = False
    # A regenerated answer: the answer it replaces.
    replaces: int | None = None
