"""The conversation socket: it checks who is asking, hands questions and stops to the turn
pipeline, and shows its client every turn of the conversation. It never calls the LLM."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from django.utils import translation
from django.utils.translation import gettext as _

from activity.preferences.feed_prefs import FeedPrefs
from chat import turns
from chat.socket import inbound, reads
from chat.socket.guard import CLOSE_CODES
from chat.socket.sending import WireSender
from chat.socket.viewer import Screen
from chat.socket.wires import wire_for
from chat.turns import actions, broadcast
from project.languages import socket_language

logger = logging.getLogger("glassbox.sockets")

CLOSE_TOO_MANY = 4429
CLOSE_SERVER_ERROR = 1011


class ChatConsumer(WireSender):
    prefs: FeedPrefs
    language: str
    # The answer this socket's own question (or regeneration) started, its right checked
    # as it was admitted.
    admitted: int | None = None

    def direct(self, message: dict[str, Any]) -> bool:
        """A turn's event, handed to its viewer at once if this socket shows that turn."""
        screen = getattr(self, "screen", None)
        return (
            screen is not None and message.get("type") == "turn.event" and screen.deliver(message)
        )

    async def connect(self) -> None:
        # What the socket speaks, by its subprotocol: fragments for htmx, or program frames.
        self.wire = wire = wire_for(self.scope)
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        opening = await reads.opening(self.scope, conversation_id, wire.surface)
        if isinstance(opening, reads.Refused):
            return await self.refuse(CLOSE_CODES[opening])
        self.user = user = self.scope["user"] = opening.user
        self.conversation, self.prefs = opening.conversation, opening.prefs
        # Activated for this connection's task only: every fragment it renders, and every
        # turn it starts, speaks the language of the page it serves.
        self.language = socket_language(self.scope, opening.language)
        translation.activate(self.language)
        self.flood = inbound.FloodGuard()
        # Group messages wait until connect returns, so none is lost or shown twice between
        # joining the groups and the snapshot of a running turn.
        cued = (broadcast.sidebar_group(user.pk),) if wire.sidebar_stale else ()
        await self.watch(user, self.conversation, also=cued)
        await self.accept(subprotocol=wire.subprotocol)
        turns.expect_questions()
        self.screen = Screen(
            conversation_id=self.conversation.pk,
            send=self.send_text,
            wire=wire,
            failed=self.follower_failed,
        )
        if opening.running is not None:
            await self.screen.join(opening.running, self.prefs)
            await self.show_questions()

    async def follower_failed(self) -> None:
        """A turn this socket shows could not be followed or shown: closed as a server
        error, which clients (htmx's ws extension too) answer by reconnecting."""
        if not self.ended:
            await self.end(CLOSE_SERVER_ERROR)

    async def refuse(self, code: int) -> None:
        # Accept, then close with a 4xxx code: a refused handshake makes htmx retry forever.
        await self.accept(subprotocol=self.wire.subprotocol)
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        # Channels leaves self.groups itself.
        self.stop_showing()

    def stop_showing(self) -> None:
        if hasattr(self, "screen"):
            self.screen.close()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Refused as it opened (closed, but a frame the client sent before it heard can
        # still arrive): it has nothing to act with, and nothing is said.
        if self.ended or not hasattr(self, "flood"):
            return
        if self.flood.flooded():
            await self.send_notice(_("Too many messages at once; this page stopped listening."))
            return await self.close(code=CLOSE_TOO_MANY)
        try:
            request = inbound.parse(text_data)
        except actions.Unreadable as problem:
            return await self.send_notice(str(problem))
        # Who may ask is checked on every message, not only at connect: for a question, in
        # the same trip to the database as its admission.
        allowed = self.permit.check
        try:
            if not isinstance(request, actions.Ask):
                await database_sync_to_async(allowed)()
            await self.act(request, allowed)
        except reads.NotAllowed as problem:
            await self.refused(problem)
        except turns.EditRefused as refusal:
            assert isinstance(request, actions.Decide)  # only a decision carries edits
            await self.send_notice(str(refusal))
            # A page gets the card back as the owner left it.
            if card := await self.wire.edit_refused(self.conversation.pk, request, refusal):
                await self.send_text(card)
        except turns.TurnRejected as refusal:
            await self.send_notice(str(refusal))

    async def act(self, request: actions.Request, allowed: Callable[[], None]) -> None:
        """One request of the page; a refusal raises. A question is admitted only if
        `allowed` (run in the admission's database trip) does not raise."""
        if isinstance(request, actions.Resume):
            for answer_id in await reads.answers_of(self.conversation.pk, request.answer_ids):
                await self.screen.join(answer_id, self.prefs)
            await self.show_questions()
            return
        started = await actions.perform(
            request,
            conversation=self.conversation,
            user=self.user,
            language=self.language,
            guard=allowed,
        )
        if not isinstance(started, turns.StartedTurn):
            return
        self.admitted = started.answer.pk
        if not started.joined:
            # The asker shows its own turn without waiting for the layer's broadcast (lost
            # if the layer fails, as after a Redis restart); the broadcast then finds it shown.
            await self.turn_started(broadcast.turn_started(started))

    # Channel-layer handlers: one per message type sent to the groups (and chat.socket.guard's).

    async def turn_started(self, message: dict[str, Any]) -> None:
        """A new turn of the conversation. Unless this socket asked it (and was checked as
        it did), its right is checked first, in the trip that reads the turn: a right taken
        away without a signal still shows nothing of it."""
        if self.ended or not hasattr(self, "permit"):  # refused as it opened
            return
        guard = None if message["answer_id"] == self.admitted else self.permit.check
        try:
            self.prefs = await self.screen.started(message, self.user.pk, self.prefs, guard)
        except reads.NotAllowed as problem:
            await self.refused(problem)

    async def turn_event(self, message: dict[str, Any]) -> None:
        if not self.ended:
            self.screen.deliver(message)
