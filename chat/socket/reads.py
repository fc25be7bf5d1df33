"""What a socket reads from the database: when it opens, on every message it receives, and
once per new turn."""

from __future__ import annotations

import enum
import functools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace
from typing import Any, cast

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user, get_user_model
from django.contrib.sessions.models import Session
from django.db import connection
from django.http import HttpRequest
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from activity.models import ActivityFeed, FeedPreferences
from activity.preferences import FeedPrefs
from chat.conversations.selectors import TurnView
from chat.models import Conversation, Message
from chat.turns.recovery import dead_turns_recover
from project.sql import column, table

# Engines whose rows a check can compare (project.sessions remembers the row it read).
DATABASE_SESSIONS = ("project.sessions", "django.contrib.sessions.backends.db")


class Refused(enum.Enum):
    SESSION = "session"
    CONVERSATION = "conversation"


class NotAllowed(Exception):
    def __init__(self, reason: Refused) -> None:
        super().__init__(reason.value)
        self.reason = reason


class Permit:
    """Whether this socket may still serve, read again for every message it receives: its
    login session may have ended (logged out, every session deleted), its user been
    deactivated or their password changed, or the conversation may no longer be theirs.

    A check is a single statement that finds the session row and the user's password as
    they were when last verified (`seen`: by the socket's handshake, or by a full check),
    and reads and verifies them again as Django's auth does only when either changed."""

    def __init__(
        self,
        session_key: str | None,
        user_id: int,
        conversation_id: uuid.UUID,
        seen: tuple[str, str] | None = None,
    ) -> None:
        self.session_key = session_key
        self.user_id = user_id
        self.conversation_id = conversation_id
        # The session row's data and the user's password hash when last verified.
        self.seen = seen

    def check(self) -> None:
        """Raises NotAllowed when this socket may serve no more; in the database thread."""
        if self.seen is not None and self._unchanged(*self.seen):
            return
        self.seen = None
        refused = self._refusal()
        if refused is not None:
            raise NotAllowed(refused)

    def _unchanged(self, data: str, password: str) -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                _unchanged_sql(),
                [
                    Conversation._meta.pk.get_db_prep_value(self.conversation_id, connection),
                    self.user_id,
                    True,
                    password,
                    self.session_key,
                    data,
                    _EXPIRES.get_db_prep_value(timezone.now(), connection),
                ],
            )
            return cursor.fetchone() is not None

    def _refusal(self) -> Refused | None:
        data, stored = self._session()
        user = get_user_model().objects.filter(pk=self.user_id, is_active=True).first()
        if (
            user is None
            or str(data.get(SESSION_KEY)) != str(self.user_id)
            or not constant_time_compare(
                data.get(HASH_SESSION_KEY, ""), user.get_session_auth_hash()
            )
        ):
            return Refused.SESSION
        if not Conversation.objects.filter(
            pk=self.conversation_id, owner_id=self.user_id
        ).exists():
            return Refused.CONVERSATION
        if stored is not None:
            self.seen = (stored, user.password)
        return None

    def _session(self) -> tuple[dict[str, Any], str | None]:
        """The login session's data, and the row it was read from (database sessions)."""
        store = import_module(settings.SESSION_ENGINE).SessionStore(self.session_key)
        if settings.SESSION_ENGINE not in DATABASE_SESSIONS:
            return store.load(), None
        stored = (
            Session.objects.filter(session_key=self.session_key, expire_date__gt=timezone.now())
            .values_list("session_data", flat=True)
            .first()
        )
        return (store.decode(stored) if stored is not None else {}), stored


_EXPIRES = Session._meta.get_field("expire_date")


@functools.cache
def _unchanged_sql() -> str:
    """Permit's check, written by hand once: it runs for every message of every socket,
    and the ORM took thirty times longer to build this statement than SQLite to run it
    (0.04 ms). The same conditions as the full check; the tests run both ways on SQLite
    and PostgreSQL."""
    user = get_user_model()
    return (
        f"SELECT 1 FROM {table(Conversation)} c INNER JOIN {table(user)} u"
        f" ON u.{column(user, 'id')} = c.{column(Conversation, 'owner')}"
        f" WHERE c.{column(Conversation, 'id')} = %s AND c.{column(Conversation, 'owner')} = %s"
        f" AND c.{column(Conversation, 'deleted_at')} IS NULL"
        f" AND u.{column(user, 'is_active')} = %s AND u.{column(user, 'password')} = %s"
        f" AND EXISTS (SELECT 1 FROM {table(Session)} s"
        f" WHERE s.{column(Session, 'session_key')} = %s"
        f" AND s.{column(Session, 'session_data')} = %s"
        f" AND s.{column(Session, 'expire_date')} > %s)"
    )


@dataclass(frozen=True, slots=True)
class Opening:
    user: Any
    conversation: Conversation
    prefs: FeedPrefs
    language: str
    # The conversation's answer still being written, if any.
    running: int | None


@database_sync_to_async
def opening(
    scope: Mapping[str, Any], conversation_id: uuid.UUID, surface: str = "page"
) -> Opening | Refused:
    """All a new socket reads, its user included, in one trip to the database thread: a
    reconnect storm (every page of a restarted server at once) queues there, so each socket
    must take one turn."""
    # Django's own reading of a login session (its hash checked against the password),
    # which needs nothing of a request but its session.
    user = get_user(cast(HttpRequest, SimpleNamespace(session=scope["session"])))
    if not user.is_authenticated:
        return Refused.SESSION
    conversation = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conversation is None:
        return Refused.CONVERSATION
    prefs, language, running = _settings_and_open_answer(user.pk, conversation.pk, surface)
    # Only an open turn can be a dead one: most sockets open on a conversation at rest.
    if running is not None and dead_turns_recover(conversation_id=conversation.pk):
        running = _open_answer(conversation)
    return Opening(user, conversation, prefs, language, running)


def _settings_and_open_answer(
    user_id: int, conversation_id: uuid.UUID, surface: str
) -> tuple[FeedPrefs, str, int | None]:
    """The user's feed preferences on `surface` and language (FeedPreferences.settings_for),
    and the conversation's open answer (`_open_answer`), in one statement."""
    overrides = FeedPreferences._meta.get_field("overrides")
    with connection.cursor() as cursor:
        cursor.execute(
            _settings_and_open_answer_sql(),
            [
                Conversation._meta.pk.get_db_prep_value(conversation_id, connection),
                *Message.OPEN_STATES,
                user_id,
            ],
        )
        stored, language, running = cursor.fetchone()
    # As the ORM reads the column (the expression only matters for a key lookup).
    stored = overrides.from_db_value(stored, cast(Any, None), connection) if stored else {}
    return (*FeedPreferences.settings_of(stored, language, surface), running)


@functools.cache
def _settings_and_open_answer_sql() -> str:
    """Written by hand once: every socket runs it as it opens (a restarted server's pages
    all at once), and the ORM took longer to build the two reads than SQLite to run them."""
    states = ", ".join(["%s"] * len(Message.OPEN_STATES))
    message, prefs = functools.partial(column, Message), functools.partial(column, FeedPreferences)
    answer = (
        f"SELECT {message('id')} FROM {table(Message)}"
        f" WHERE {message('conversation')} = %s AND {message('state')} IN ({states})"
        f" ORDER BY {message('created_at')}, {message('id')} LIMIT 1"
    )
    return (
        f"SELECT p.{prefs('overrides')}, p.{prefs('language')}, ({answer})"
        f" FROM (SELECT 1 AS one) AS one"
        f" LEFT JOIN {table(FeedPreferences)} p ON p.{prefs('user')} = %s"
    )


def _open_answer(conversation: Conversation) -> int | None:
    return (
        Message.objects.filter(conversation=conversation, state__in=Message.OPEN_STATES)
        .values_list("pk", flat=True)
        .first()
    )


@database_sync_to_async
def new_turn(
    question_id: int, answer_id: int, user_id: int, guard: Callable[[], None] | None = None
) -> tuple[Message, TurnView, FeedPrefs]:
    """What a page shows of a turn that just began, and its viewer's preferences, read again
    for each turn so a change applies from the next question; `guard` (a Permit's check)
    runs first, and whatever it raises reads nothing."""
    if guard is not None:
        guard()
    messages = {
        m.pk: m
        for m in Message.objects.select_related("feed", "conversation").filter(
            pk__in=[question_id, answer_id]
        )
    }
    question = messages[question_id]
    question.conversation.display_title  # noqa: B018 - read here, where the database may be used
    answer = TurnView(
        message=_as_begun(messages[answer_id]),
        content="",
        events=[],
        lines=[],
        question=question.content,
        question_id=question.pk,
    )
    return question, answer, FeedPreferences.settings_for(user_id)[0]


def _as_begun(answer: Message) -> Message:
    """The answer as its turn began. A socket may hear of a turn after it ended (a busy
    process, a fast one); its events follow this card, or the database fills them, and bring
    it to where it ended: showing the end first would flash the summary, then the lines."""
    if answer.state in Message.OPEN_STATES:
        return answer
    feed = answer.feed
    answer.state, answer.content = Message.State.STREAMING, ""
    if feed is not None:
        answer.feed = ActivityFeed(
            pk=feed.pk, owner_id=feed.owner_id, conversation_id=feed.conversation_id,
            language=feed.language, started_at=feed.started_at, model=feed.model,
        )  # fmt: skip
    return answer


async def answers_of(conversation_id: uuid.UUID, answer_ids: tuple[int, ...]) -> list[int]:
    """Those of these ids that are answers of this conversation, in order."""
    found = Message.objects.filter(
        conversation_id=conversation_id, role=Message.Role.ASSISTANT, pk__in=answer_ids
    )
    return [pk async for pk in found.order_by("id").values_list("pk", flat=True)]
