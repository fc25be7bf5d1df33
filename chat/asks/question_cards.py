"""What a page shows of an MCP server's questions: one card per question, built from its row
(the record, whoever shows it: a page that loads, a socket told of a change, a second device).
Every text on it is the server's and untrusted; the templates escape it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from activity.presenting.bounded import cut_long
from chat.agent.mcp.elicit_schema import Field, UnsupportedForm, read_form, safe_link
from chat.agent.sampling import SamplingRequest
from chat.asks.elicitations import close_if_orphaned, outcome_of
from chat.models import Elicitation


@dataclass(frozen=True, slots=True)
class QuestionCard:
    id: uuid.UUID
    answer_id: int
    server: str
    message: str
    mode: str
    fields: tuple[Field, ...]
    # The URL of a URL-mode question, shown as text; `link` is it only when safe to follow.
    url: str
    link: str
    deadline: datetime
    waiting: bool
    # How it ended, for people ("" while waiting).
    outcome: str
    completed: bool
    accepted: bool
    # A request to use the model (MCP sampling), as the server sent it within bounds.
    request: SamplingRequest | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "message_id": self.answer_id,
            "server": self.server,
            "message": self.message,
            "mode": self.mode,
            "fields": [f.to_json() for f in self.fields],
            "url": self.url,
            "deadline": self.deadline.isoformat(),
            "state": "waiting" if self.waiting else "closed",
            "outcome": self.outcome,
            "completed": self.completed,
            **({"sampling": self.request.to_json()} if self.request is not None else {}),
        }


def card_of(row: Elicitation) -> QuestionCard:
    try:
        fields = read_form(row.requested_schema) if row.mode == Elicitation.Mode.FORM else ()
    except UnsupportedForm:
        fields = ()
    # The server's words are cut where a socket's frame could not carry them (the row keeps
    # them whole); a URL that had to be cut is no link: it would not lead where it said.
    url = cut_long(row.url)
    return QuestionCard(
        id=row.pk,
        answer_id=row.answer_id,
        server=row.server,
        message=cut_long(row.message),
        mode=row.mode,
        fields=fields,
        url=url,
        link=safe_link(row.url) if url == row.url else "",
        deadline=row.deadline,
        waiting=row.state == Elicitation.State.WAITING,
        outcome=outcome_of(row, fields),
        completed=row.completed_at is not None,
        accepted=row.state == Elicitation.State.ACCEPTED,
        request=(
            SamplingRequest.from_json(row.server, row.call_id, row.requested_schema)
            if row.mode == Elicitation.Mode.SAMPLING
            else None
        ),
    )


def cards(conversation_id: uuid.UUID, changed: uuid.UUID | None = None) -> list[QuestionCard]:
    """The conversation's waiting questions (those that can no longer be answered are
    closed first, and shown once as closed), and `changed` whatever its state."""
    rows = list(
        Elicitation.objects.select_related("answer", "answered_by")
        .filter(answer__conversation_id=conversation_id, state=Elicitation.State.WAITING)
        .order_by("asked_at")
    )
    close_if_orphaned(rows)
    if changed is not None and all(row.pk != changed for row in rows):
        row = (
            Elicitation.objects.select_related("answer", "answered_by")
            .filter(pk=changed, answer__conversation_id=conversation_id)
            .first()
        )
        if row is not None:
            rows.append(row)
    return [card_of(row) for row in rows]
