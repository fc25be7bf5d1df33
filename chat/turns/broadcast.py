"""What travels over the channel layer to every socket and stream of a conversation."""

from __future__ import annotations

from typing import Any

from chat.models import Conversation
from chat.turns.started import StartedTurn
from project.groups import group_send


def user_group(user_id: int) -> str:
    """The group every socket of one user joins: told when access ends
    (chat.socket.revocation)."""
    return f"user-{user_id}"


def sidebar_group(user_id: int) -> str:
    """The group of one user's sockets that show the list of conversations (pages, not
    programs): told when it changes. Apart from the user's group, so a program's idle
    sockets are not woken twice by every turn of their user."""
    return f"sidebar-{user_id}"


CONVERSATIONS_CHANGED = "conversations.changed"


async def send_conversations_changed(owner_id: int, conversation_id: Any = None) -> None:
    """The owner's pages of other conversations refresh their sidebar: `conversation_id`
    began, ended a turn, was renamed, archived or deleted (its own page sees its turns)."""
    message = {"type": CONVERSATIONS_CHANGED, "conversation": str(conversation_id or "")}
    await group_send(sidebar_group(owner_id), message)


def turn_started(turn: StartedTurn) -> dict[str, Any]:
    """The message that tells a conversation's sockets a turn began; the socket that asked
    is handed it directly, so it never depends on the layer for its own turn."""
    message: dict[str, Any] = {
        "type": "turn.started",
        "question_id": turn.question.pk,
        "answer_id": turn.answer.pk,
        # The feed's: the lines a socket writes itself (the draft's label) speak it too.
        "language": turn.answer.answer_feed.language,
    }
    if turn.replaces is not None:
        message["replaces"] = turn.replaces
    return message


async def send_turn_started(turn: StartedTurn) -> None:
    await group_send(Conversation.group_name_for(turn.answer.conversation_id), turn_started(turn))


async def send_turn_event(
    group: str,
    *,
    answer_id: int,
    event: dict[str, Any],
    offset: int | None = None,
    unsaved: list[dict[str, Any]] | None = None,
    written: dict[str, int] | None = None,
) -> None:
    """`offset` places a text event in the answer, so a follower can tell a gap; `unsaved`
    are the recorded events before this one that are not in the database yet; with `done`,
    `written` is how much of the turn is stored (its last seq, its text's length), so a
    follower that has it all reads nothing."""
    message: dict[str, Any] = {"type": "turn.event", "answer_id": answer_id, "event": event}
    if offset is not None:
        message["offset"] = offset
    if unsaved:
        message["unsaved"] = unsaved
    if written is not None:
        message["written"] = written
    await group_send(group, message)
