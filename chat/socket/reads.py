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
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user,
    get_user_model,
)
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.models import Session
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from activity.models import ActivityFeed, FeedPreferences
from activity.preferences.feed_prefs import FeedPrefs
from chat.conversations.selectors import TurnView
from chat.models import Conversation, Message
from chat.turns.recovery import dead_turns_recover
from project.sql import Compiled, Param

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
        row = _UNCHANGED.fetchone(
            conversation=self.conversation_id,
            owner=self.user_id,
            password=password,
            session=self.session_key,
            data=data,
            now=timezone.now(),
        )
        return row is not None

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


def _unchanged_query() -> QuerySet[Conversation]:
    """Permit's check, compiled once: it runs for every message of every socket, and the
    ORM took thirty times longer to build this statement than SQLite to run it (0.04 ms).
    The same conditions as the full check, which the tests compare on SQLite and
    PostgreSQL."""
    user = get_user_model()
    session = Session._meta
    sessions = Session.objects.filter(
        session_key=Param("session", session.pk),
        session_data=Param("data", session.get_field("session_data")),
        expire_date__gt=Param("now", session.get_field("expire_date")),
    )
    return Conversation.objects.filter(
        Exists(sessions),
        pk=Param("conversation", Conversation._meta.pk),
        owner_id=Param("owner", user._meta.pk),
        owner__is_active=True,
        owner__password=Param("password", user._meta.get_field("password")),
    )


_UNCHANGED = Compiled(_unchanged_query, exists=True)


@dataclass(frozen=True, slots=True)
class Opening:
    user: Any
    conversation: Conversation
    prefs: FeedPrefs
    language: str
    # The conversation's answer still being written, if any.
    running: int | None


# A socket's user, its conversation, and its settings, language and open answer.
_Read = tuple[Any, Conversation, tuple[FeedPrefs, str, int | None]]


def read_opening(
    scope: Mapping[str, Any], conversation_id: uuid.UUID, surface: str = "page"
) -> Opening | Refused:
    """All a new socket reads, its user included, in one trip to the database thread
    (`opening`): a reconnect storm (every page of a restarted server at once) queues there,
    so each socket must take one turn."""
    read: _Read | Refused | None = _opened(scope["session"], conversation_id, surface)
    if read is None:
        read = _opened_step_by_step(scope["session"], conversation_id, surface)
    if isinstance(read, Refused):
        return read
    user, conversation, (prefs, language, running) = read
    # Only an open turn can be a dead one: most sockets open on a conversation at rest.
    if running is not None and dead_turns_recover(conversation_id=conversation.pk):
        running = _open_answer(conversation)
    return Opening(user, conversation, prefs, language, running)


opening = database_sync_to_async(read_opening)


def _opened_step_by_step(
    session: Any, conversation_id: uuid.UUID, surface: str
) -> _Read | Refused:
    """Django's own reading of a login session (its hash checked against the password, an
    old secret's hash renewed), which needs nothing of a request but its session; then the
    conversation, the settings and the open answer."""
    user = get_user(cast(HttpRequest, SimpleNamespace(session=session)))
    if not user.is_authenticated:
        return Refused.SESSION
    conversation = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conversation is None:
        return Refused.CONVERSATION
    return user, conversation, _settings_and_open_answer(user.pk, conversation.pk, surface)


def _opened(session: Any, conversation_id: uuid.UUID, surface: str) -> _Read | None:
    """The common case in one statement: a database session that Django's get_user accepts
    as it stands, of the user who owns the conversation. Anything else (no such session or
    conversation, another user's, an inactive user, a hash of a changed password or of an
    old secret, a backend other than the model's) is None: the step-by-step reading decides,
    as Django would, and refuses or renews."""
    if settings.SESSION_ENGINE not in DATABASE_SESSIONS or not session.session_key:
        return None
    row = _OPENING.fetchone(
        conversation=conversation_id, session=session.session_key, now=timezone.now()
    )
    if row is None:
        return None
    own, users = len(_conversation_columns()), len(_user_columns())
    overrides, language, stored, running = row[own + users :]
    if stored is None:
        return None
    data = session.decode(stored)
    user = get_user_model().from_db(connection.alias, _user_columns(), row[own : own + users])
    if not _accepted(data, user):
        return None
    conversation = Conversation.from_db(connection.alias, _conversation_columns(), row[:own])
    Conversation._meta.get_field("owner").set_cached_value(conversation, user)
    # The session as its store would have loaded it; its permit compares the row with this.
    session._session_cache, session.accessed, session.stored = data, True, stored
    prefs, language = FeedPreferences.settings_of(overrides or {}, language, surface)
    return user, conversation, (prefs, language, running)


_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _accepted(data: Mapping[str, Any], user: Any) -> bool:
    """Whether django.contrib.auth.get_user returns `user` for this session data without
    writing anything: its id, the model backend, an active user, and the session's hash of
    the password under the current secret."""
    try:
        user_id = get_user_model()._meta.pk.to_python(data[SESSION_KEY])
    except (KeyError, ValidationError):
        return False
    session_hash = data.get(HASH_SESSION_KEY)
    return (
        user_id == user.pk
        and data.get(BACKEND_SESSION_KEY) == _MODEL_BACKEND
        and _MODEL_BACKEND in settings.AUTHENTICATION_BACKENDS
        and ModelBackend().user_can_authenticate(user)
        and isinstance(session_hash, str)
        and bool(session_hash)
        and constant_time_compare(session_hash, user.get_session_auth_hash())
    )


@functools.cache
def _conversation_columns() -> list[str]:
    return [field.attname for field in Conversation._meta.concrete_fields]


@functools.cache
def _user_columns() -> list[str]:
    return [field.attname for field in get_user_model()._meta.concrete_fields]


def _opening_query() -> QuerySet[Any]:
    """Compiled once: the conversation, its owner, the login session's row, the owner's
    settings and the conversation's open answer. Every socket runs it as it opens, and the
    ORM took longer to build its three reads than SQLite to run them."""
    session = Session._meta
    login = Session.objects.filter(
        session_key=Param("session", session.pk),
        expire_date__gt=Param("now", session.get_field("expire_date")),
    ).values("session_data")[:1]
    open_answer = Message.objects.filter(
        conversation_id=OuterRef("pk"), state__in=Message.OPEN_STATES
    ).values("pk")[:1]
    return (
        Conversation.objects.filter(pk=Param("conversation", Conversation._meta.pk))
        .annotate(opening_login=Subquery(login), opening_running=Subquery(open_answer))
        .values_list(
            *_conversation_columns(),
            *(f"owner__{name}" for name in _user_columns()),
            "owner__feed_preferences__overrides",
            "owner__feed_preferences__language",
            "opening_login",
            "opening_running",
        )
    )


_OPENING = Compiled(_opening_query, converted=True)


def _settings_and_open_answer(
    user_id: int, conversation_id: uuid.UUID, surface: str
) -> tuple[FeedPrefs, str, int | None]:
    """The user's feed preferences and language (FeedPreferences.settings_for), and the
    conversation's open answer (`_open_answer`), in one statement."""
    row = _SETTINGS_AND_OPEN_ANSWER.fetchone(user=user_id, conversation=conversation_id)
    # No row only for a user deleted since the handshake: the defaults, no answer.
    stored, language, running = row if row is not None else (None, None, None)
    # As the ORM reads the column (the expression only matters for a key lookup).
    overrides = FeedPreferences._meta.get_field("overrides")
    stored = overrides.from_db_value(stored, cast(Any, None), connection) if stored else {}
    return (*FeedPreferences.settings_of(stored, language, surface), running)


def _settings_and_open_answer_query() -> QuerySet[Any]:
    """Compiled once: every socket runs it as it opens (a restarted server's pages all at
    once), and the ORM took longer to build the two reads than SQLite to run them."""
    user = get_user_model()
    open_answer = Message.objects.filter(
        conversation_id=Param("conversation", Conversation._meta.pk),
        state__in=Message.OPEN_STATES,
    ).values("pk")[:1]
    return (
        user.objects.filter(pk=Param("user", user._meta.pk))
        .annotate(running=Subquery(open_answer))
        .values_list("feed_preferences__overrides", "feed_preferences__language", "running")
    )


_SETTINGS_AND_OPEN_ANSWER = Compiled(_settings_and_open_answer_query)


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
