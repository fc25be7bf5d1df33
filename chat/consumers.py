"""The conversation socket. It checks who is asking and what they sent, starts turns, and
renders the conversation group's events for its own client. It never calls the LLM."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import deque
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _

from activity.events import to_json
from activity.live import LivePresenter
from activity.models import FeedPreferences
from activity.preferences import FeedPrefs
from chat import fragments, services
from chat.broadcast import send_turn_started
from chat.db import drop_stale_connections
from chat.follow import TurnFollower
from chat.models import Conversation, Message
from chat.recovery import dead_turns_recover
from chat.selectors import amessage_with_feed
from chat.signals import session_group
from chat.turns import RUNNING, live_text, turn_launch, turn_stop
from project.languages import language_from_browser

logger = logging.getLogger("glassbox.socket")

# Close codes in the 4000s: htmx's ws extension reconnects only after 1006/1011/1012/1013.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MANY = 4429
JSON_PROTOCOL = "glassbox.json"
# htmx's ws-send adds HEADERS to every form message.
ALLOWED_KEYS = {"message", "client_id", "stop", "HEADERS"}
FLOOD_LIMIT = 20
FLOOD_WINDOW = 10.0


class ChatConsumer(AsyncWebsocketConsumer):
    conversation: Conversation
    group: str
    wants_json: bool

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.refuse(CLOSE_UNAUTHENTICATED)
            return
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        opening = await _opening(user, conversation_id)
        if opening is None:
            await self.refuse(CLOSE_NOT_FOUND)
            return
        self.conversation, self.prefs, language, running = opening
        self.group = self.conversation.group_name
        # Activated for this connection's task only: every fragment it renders, and every
        # turn it starts, speaks the language of the page it serves.
        self.language = language or language_from_browser(
            self.scope.get("cookies", {}), self.scope.get("headers", [])
        )
        translation.activate(self.language)
        self.follower = TurnFollower()
        self.recent: deque[float] = deque()
        self.presenters: dict[int, LivePresenter] = {}
        self.timers: dict[int, asyncio.Task] = {}
        self.watchdogs: dict[int, asyncio.Task] = {}
        self.heard: dict[int, float] = {}
        # Group messages wait until connect returns, so none is lost or shown twice between
        # joining the group and the snapshot of a running turn.
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.session_group = session_group(self.scope["session"].session_key)
        await self.channel_layer.group_add(self.session_group, self.channel_name)
        await self.accept(subprotocol=JSON_PROTOCOL if self.wants_json else None)
        if running is not None:
            await self.send_running_turn(running)

    @property
    def wants_json(self) -> bool:
        """Programs ask for JSON events with the `glassbox.json` subprotocol."""
        return JSON_PROTOCOL in self.scope.get("subprotocols", [])

    async def refuse(self, code: int) -> None:
        # Accept, then close with a 4xxx code: a refused handshake makes htmx retry forever.
        await self.accept(subprotocol=JSON_PROTOCOL if self.wants_json else None)
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(self.session_group, self.channel_name)
            for task in [*self.timers.values(), *self.watchdogs.values()]:
                task.cancel()

    async def send_running_turn(self, running: int) -> None:
        message = await amessage_with_feed(running, self.prefs)
        # The database holds the text up to the last beat; the running process knows it all.
        message.content = live_text(message.pk) or message.content
        self.follower.snapshot(message)
        # The snapshot shows what is stored; from here on this viewer's presentation applies.
        presenter = self.presenters[message.pk] = LivePresenter(self.prefs, message.pk)
        presenter.draft_shown = True
        presenter.shown.extend(line.key for line in message.feed_lines)
        for event in message.feed_events:
            presenter.on_event(to_json(event))
        if not self.wants_json:
            await self.send(text_data=fragments.assistant_message(message))
        self.watch(message.pk)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if await self.flooding():
            return
        await drop_stale_connections()
        try:
            request = self.parse(text_data)
        except ValueError as problem:
            await self.send_notice(str(problem))
            return
        if not await self.still_owned():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        if "stop" in request:
            await self.stop(request["stop"])
            return
        try:
            turn = await database_sync_to_async(services.turn_start)(
                conversation=self.conversation,
                text=request["message"],
                client_id=request.get("client_id"),
                language=self.language,
            )
        except services.TurnRejected as refusal:
            await self.send_notice(str(refusal))
            return
        if turn.joined:
            return  # a repeated submission: the turn already runs and this socket follows it
        # The question appears on every open tab before the agent starts.
        await send_turn_started(self.group, question_id=turn.question.pk, answer_id=turn.answer.pk)
        turn_launch(turn.answer)

    async def flooding(self) -> bool:
        """More than FLOOD_LIMIT messages in FLOOD_WINDOW seconds: the socket is closed."""
        now = time.monotonic()
        self.recent.append(now)
        while self.recent and self.recent[0] < now - FLOOD_WINDOW:
            self.recent.popleft()
        if len(self.recent) > FLOOD_LIMIT:
            await self.send_notice(_("Too many messages at once; this page stopped listening."))
            await self.close(code=CLOSE_TOO_MANY)
            return True
        return False

    async def still_owned(self) -> bool:
        """Ownership is checked on every message, not only at connect."""
        return await Conversation.objects.filter(
            pk=self.conversation.pk, owner=self.scope["user"]
        ).aexists()

    async def stop(self, answer_id: int) -> None:
        answer = await Message.objects.filter(
            pk=answer_id, conversation=self.conversation, state=Message.State.STREAMING
        ).afirst()
        if answer is None:
            await self.send_notice(_("That answer is not running any more."))
            return
        await turn_stop(answer)

    def parse(self, text_data: str | None) -> dict[str, Any]:
        if text_data is None:
            raise ValueError(_("Send your question as text."))
        try:
            data = json.loads(text_data)
        except ValueError:
            raise ValueError(_("That message could not be read (it was not JSON).")) from None
        if not isinstance(data, dict):
            raise ValueError(_("That message could not be read (expected a JSON object)."))
        unknown = set(data) - ALLOWED_KEYS
        if unknown:
            raise ValueError(_("Unknown field: %(field)s.") % {"field": sorted(unknown)[0]})
        if "stop" in data:
            try:
                return {"stop": int(data["stop"])}
            except (TypeError, ValueError):
                raise ValueError(_("Stop needs the id of the answer to stop.")) from None
        request = {"message": services.question_clean(data.get("message"))}
        if data.get("client_id"):
            try:
                request["client_id"] = uuid.UUID(str(data["client_id"]))
            except ValueError:
                raise ValueError(_("client_id must be a UUID.")) from None
        return request

    async def send_notice(self, text: str) -> None:
        if self.wants_json:
            await self.send(text_data=json.dumps({"type": "error", "message": text}))
        else:
            await self.send(text_data=fragments.notice(text))

    # Channel-layer handlers: one per message type sent to the conversation's group.

    async def session_ended(self, message: dict[str, Any]) -> None:
        await self.close(code=CLOSE_UNAUTHENTICATED)

    async def turn_started(self, message: dict[str, Any]) -> None:
        if self.follower.follows(message["answer_id"]):
            return  # already in this socket's snapshot
        question, answer = await _question_and_answer(message["question_id"], message["answer_id"])
        self.follower.start(answer.pk)
        self.watch(answer.pk)
        # Preferences are read again per turn, so a change applies from the next question.
        self.prefs = await FeedPreferences.aprefs_for(self.scope["user"].pk)
        self.presenters[answer.pk] = LivePresenter(self.prefs, answer.pk)
        if self.prefs.mode == "progress":
            self.timers[answer.pk] = asyncio.create_task(self.show_draft_later(answer.pk))
        if self.wants_json:
            await self.send(
                text_data=json.dumps(
                    {
                        "type": "turn",
                        "question_id": str(question.pk),
                        "message_id": str(answer.pk),
                    }
                )
            )
        else:
            await self.send(
                text_data=fragments.clear_notice() + fragments.turn_started(question, answer)
            )

    async def turn_event(self, message: dict[str, Any]) -> None:
        answer_id = message["answer_id"]
        self.heard[answer_id] = time.monotonic()
        for event in await self.follower.admit(message):
            await self.show(answer_id, event)

    async def show(self, answer_id: int, event: dict[str, Any]) -> None:
        if event["type"] == "done":
            self.forget(answer_id)
        if self.wants_json:
            await self.send(text_data=json.dumps(event, ensure_ascii=False))
            return
        if event["type"] == "done":
            answer = await amessage_with_feed(answer_id, self.prefs)
            await self.send(text_data=fragments.assistant_message(answer))
            return
        presenter = self.presenters.get(answer_id)
        if presenter is None:  # a turn that began before this socket was open
            presenter = self.presenters[answer_id] = LivePresenter(self.prefs, answer_id)
            presenter.draft_shown = True
        ops = presenter.on_event(event)
        if ops:
            await self.send(text_data=fragments.live_ops(answer_id, ops))

    def forget(self, answer_id: int) -> None:
        """A finished turn needs no presenter, draft timer or watchdog any more."""
        self.presenters.pop(answer_id, None)
        self.heard.pop(answer_id, None)
        for tasks in (self.timers, self.watchdogs):
            task = tasks.pop(answer_id, None)
            # The watchdog may be the one showing the end: it returns by itself.
            if task is not None and task is not asyncio.current_task():
                task.cancel()

    def watch(self, answer_id: int) -> None:
        if answer_id not in self.watchdogs:
            self.watchdogs[answer_id] = asyncio.create_task(self.watchdog(answer_id))

    async def watchdog(self, answer_id: int) -> None:
        """Whenever a followed turn goes quiet: if another process ran it and died, this
        socket notices (through the heartbeat) and every client sees it interrupted; if it
        ended but its `done` was dropped on the way, this client is shown the end anyway."""
        quiet = settings.GLASSBOX_HEARTBEAT_SECONDS * 2
        self.heard[answer_id] = time.monotonic()
        while True:
            await asyncio.sleep(quiet)
            if time.monotonic() - self.heard.get(answer_id, 0) < quiet:
                continue
            if answer_id not in RUNNING:
                await database_sync_to_async(dead_turns_recover)(conversation=self.conversation)
            events = await self.follower.ended(answer_id)
            for event in events:
                await self.show(answer_id, event)
            if events:
                return

    async def show_draft_later(self, answer_id: int) -> None:
        await asyncio.sleep(self.prefs.show_after)
        presenter = self.presenters.get(answer_id)
        ops = presenter.tick() if presenter else []
        if ops:
            await self.send(text_data=fragments.live_ops(answer_id, ops))


@database_sync_to_async
def _opening(user, conversation_id) -> tuple[Conversation, FeedPrefs, str, int | None] | None:
    """All a new socket reads, in one trip to the database thread: a reconnect storm (every
    page of a restarted server at once) queues there, so each socket must take one turn."""
    conversation = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conversation is None:
        return None
    dead_turns_recover(conversation=conversation)
    prefs, language = FeedPreferences.settings_for(user.pk)
    running = (
        Message.objects.filter(conversation=conversation, state=Message.State.STREAMING)
        .values_list("pk", flat=True)
        .first()
    )
    return conversation, prefs, language, running


@database_sync_to_async
def _question_and_answer(question_id: int, answer_id: int) -> tuple[Message, Message]:
    messages = {
        m.pk: m
        for m in Message.objects.select_related("feed", "conversation").filter(
            pk__in=[question_id, answer_id]
        )
    }
    answer = messages[answer_id]
    answer.feed_events = []
    question = messages[question_id]
    question.conversation.display_title  # noqa: B018 - read here, where the database may be used
    return question, answer
