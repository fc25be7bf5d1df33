"""A request about a conversation that is refused: a turn that cannot start, a decision or an
answer that cannot be taken. Both the turn pipeline and what waits for a person refuse with it,
and every transport shows its message as it is, with its HTTP status."""

from __future__ import annotations


class TurnRejected(Exception):
    """A turn that cannot start; the message is shown to the user as it is."""

    status = 409
