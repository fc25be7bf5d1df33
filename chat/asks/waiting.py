"""One protocol for everything that waits for a person. Each kind (a tool call that asks
first, an MCP server's question mid-call) says what it waits on in the same terms: the turn
that waits, its deadline, the card a template draws it with, the request that answers it (as
chat.turns.actions reads it for every surface) and the event its answer records. The inbox,
its badge and the API list waits through it; a new kind plugs in by adding itself to KINDS."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, ClassVar, Protocol

from django.db.models import QuerySet
from django.urls import reverse
from django.utils.translation import gettext as _

from activity.recording.events import Decision, Status
from chat.asks import question_cards
from chat.asks.answers import AnswerQuestion, Decide
from chat.asks.approval_cards import ApprovalCard, card_of
from chat.models import Elicitation, Message, ToolApproval


class Waiting(Protocol):
    """One thing that waits for a person."""

    # Its name in the inbox and the API ("approval", "question").
    kind: ClassVar[str]
    # How it is answered: the request that answers it, read alike from the socket, the
    # form and the API (chat.turns.actions), and the event its answer records.
    answered_by: ClassVar[type]
    records: ClassVar[type]

    @property
    def answer_id(self) -> int:
        """The turn that waits."""
        ...

    @property
    def conversation_id(self) -> uuid.UUID: ...

    @property
    def deadline(self) -> datetime:
        """When it stops waiting (denied, or closed unanswered)."""
        ...

    @property
    def key(self) -> str:
        """Its id on a page, unique across kinds."""
        ...

    @property
    def title(self) -> str:
        """What it asks, in a line."""
        ...

    @property
    def answer_url(self) -> str:
        """Where the inbox's form posts its answer (the same fields as the socket's)."""
        ...

    @property
    def api_url(self) -> str:
        """Where a program answers it over REST ('' where programs use the socket)."""
        ...

    def card(self) -> Any:
        """What a template needs to draw it and its answer's form."""
        ...


@dataclass(frozen=True)
class ApprovalWait:
    """A tool call that asks first (chat.asks.approvals); its turn holds no task."""

    kind: ClassVar[str] = "approval"
    answered_by: ClassVar[type] = Decide
    records: ClassVar[type] = Decision
    row: ToolApproval

    @staticmethod
    def waiting_for(user: Any) -> QuerySet[ToolApproval]:
        return ToolApproval.objects.waiting().filter(
            answer__conversation__owner=user,
            answer__conversation__deleted_at__isnull=True,
        )

    @property
    def answer_id(self) -> int:
        return self.row.answer_id

    @property
    def conversation_id(self) -> uuid.UUID:
        return self.row.answer.conversation_id

    @property
    def deadline(self) -> datetime:
        return self.row.deadline

    @property
    def key(self) -> str:
        return f"approval-{self.row.pk}"

    @property
    def title(self) -> str:
        return self._card.title

    @property
    def answer_url(self) -> str:
        return reverse("chat:inbox_act", args=[self.conversation_id])

    @property
    def api_url(self) -> str:
        return reverse("api-approval", args=[self.conversation_id, self.row.call_id])

    def card(self) -> ApprovalCard:
        return self._card

    @cached_property
    def _card(self) -> ApprovalCard:
        # Built once for its title and its card; on the inbox's page its forms post there.
        return card_of(self.row, standalone=True)


@dataclass(frozen=True, slots=True)
class QuestionWait:
    """An MCP server's question during a call (chat.asks.elicitations); its turn's task
    waits for the answer."""

    kind: ClassVar[str] = "question"
    answered_by: ClassVar[type] = AnswerQuestion
    # The 💬 line with the answer as people may see it (chat.asks.elicitations).
    records: ClassVar[type] = Status
    row: Elicitation

    @staticmethod
    def waiting_for(user: Any) -> QuerySet[Elicitation]:
        # A question waits only while its turn runs: one whose turn ended can reach no server.
        return Elicitation.objects.filter(
            state=Elicitation.State.WAITING,
            answer__state=Message.State.STREAMING,
            answer__conversation__owner=user,
            answer__conversation__deleted_at__isnull=True,
        )

    @property
    def answer_id(self) -> int:
        return self.row.answer_id

    @property
    def conversation_id(self) -> uuid.UUID:
        return self.row.answer.conversation_id

    @property
    def deadline(self) -> datetime:
        return self.row.deadline

    @property
    def key(self) -> str:
        return f"waiting-question-{self.row.pk}"

    @property
    def title(self) -> str:
        if self.row.mode == Elicitation.Mode.SAMPLING:
            return _("The %(server)s server asks to use the model") % {"server": self.row.server}
        return _("The %(server)s server asks") % {"server": self.row.server}

    @property
    def answer_url(self) -> str:
        # Answered like on its page; programs answer over the conversation's socket.
        return reverse("chat:conversation_act", args=[self.conversation_id])

    @property
    def api_url(self) -> str:
        return ""

    def card(self) -> question_cards.QuestionCard:
        return question_cards.card_of(self.row)


# Every kind of wait, each with its rule (`waiting_for`, what waits for a user) and its row.
KINDS: tuple[type[ApprovalWait] | type[QuestionWait], ...] = (ApprovalWait, QuestionWait)


def _conforms(wait: ApprovalWait | QuestionWait) -> Waiting:
    return wait  # mypy checks here that every kind is a Waiting
