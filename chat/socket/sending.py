"""What a socket sends that is not a turn's event, in its wire's form (chat.socket.wires):
notices, the cards of MCP servers' questions and the sidebar's cue, every frame within the
socket's budget."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from activity.presenting.bounded import fits, size_of
from chat.models import Conversation
from chat.socket import questions, reads, render
from chat.socket.guard import GuardedConsumer
from chat.socket.wires import SocketWire

logger = logging.getLogger("glassbox.sockets")


class WireSender(GuardedConsumer):
    conversation: Conversation
    wire: SocketWire

    async def send_text(self, text: str) -> None:
        """Every frame the socket sends: one over the budget (many long things at once, each
        already cut) is not sent, as Daphne would end the socket; the page is told to reload
        instead, which draws the same record over HTTP."""
        if not fits(text):
            logger.warning("a %s-byte frame was not sent on a socket", size_of(text))
            text = self.wire.notice(render.too_large())
        await self.send(text_data=text)

    async def send_notice(self, text: str) -> None:
        await self.send_text(self.wire.notice(text))

    # Channel-layer handlers: one per message type sent to the groups.

    async def conversations_changed(self, message: dict[str, Any]) -> None:
        """Another of the user's conversations began, ended a turn or was renamed, archived
        or deleted: a page refreshes its sidebar (glassbox.js fetches it, scoped to its
        user). A page's own turns tell it themselves."""
        if self.ended or not hasattr(self, "permit") or not self.wire.sidebar_stale:
            return
        if message.get("conversation") != str(self.conversation.pk):
            await self.send_text(self.wire.sidebar_stale)

    async def elicitation_changed(self, message: dict[str, Any]) -> None:
        """An MCP server's question was asked, answered or ended: every socket of the
        conversation shows the cards as the record has them, its right checked first."""
        if self.ended or not hasattr(self, "permit"):
            return
        try:
            await self.show_questions(uuid.UUID(message["question_id"]), self.permit.check)
        except reads.NotAllowed as problem:
            await self.refused(problem)

    async def show_questions(
        self, changed: uuid.UUID | None = None, guard: Callable[[], None] | None = None
    ) -> None:
        shown = await questions.waiting(self.conversation.pk, changed=changed, guard=guard)
        if shown is not None:
            await self.send_text(self.wire.questions(self.conversation.pk, shown))
