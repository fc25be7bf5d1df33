"""How a person answers what waits, as the turn pipeline reads it from the socket, the form
and the API (chat.turns.actions): a decision on a call that asks first, an answer to an MCP
server's question."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from chat.asks.receipts import Edits


@dataclass(frozen=True, slots=True)
class Decide:
    call_id: str
    approve: bool
    reason: str = ""
    # The arguments to run instead (an approval only), and the fingerprint the card showed.
    edits: Edits | None = None
    fingerprint: str = ""


@dataclass(frozen=True, slots=True)
class AnswerQuestion:
    """An answer to an MCP server's question (chat.asks.elicitations)."""

    question_id: uuid.UUID
    action: str
    values: dict[str, Any]
