"""Whether a question may start a turn, and the rows that start it: the input, the user's
limits, one running turn per conversation, and `client_id` joins of a repeated submission."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from activity.selectors import running_and_recent, tokens_since
from chat.conversations.refusals import TurnRejected
from chat.conversations.services import answer_open
from chat.models import Conversation, Message
from chat.turns.recovery import dead_turns_recover
from chat.turns.started import StartedTurn
from project.languages import written_language
from project.sql import insert_row
from project.text_rules import looks_empty, unstorable


class TurnLimited(TurnRejected):
    """Too many turns for one user, at once or in the last minute."""

    status = 429


class Restarting(TurnRejected):
    """This process is restarting: another one takes the question."""

    status = 503


class QuestionInvalid(TurnRejected, ValueError):
    """A question that cannot be asked as it is; the text says why."""

    status = 400


def question_clean(text: object) -> str:
    if not isinstance(text, str):
        raise QuestionInvalid(_("The question must be text."))
    problem = unstorable(text)
    if problem:
        raise QuestionInvalid(problem)
    # The limit counts what was sent, spaces around it included, as the API's schema says.
    limit = settings.GLASSBOX_MAX_MESSAGE_CHARS
    if len(text) > limit:
        raise QuestionInvalid(
            _("That question is %(length)s characters long; the limit is %(limit)s.")
            % {"length": _grouped(len(text)), "limit": _grouped(limit)}
        )
    text = text.strip()
    if looks_empty(text):
        raise QuestionInvalid(_("Type a question first."))
    return text


def _grouped(number: int) -> str:
    return number_format(number, force_grouping=True)


def admit(
    *,
    conversation: Conversation,
    text: object,
    client_id: uuid.UUID | None = None,
    language: str | None = None,
    guard: Callable[[], None] | None = None,
) -> StartedTurn:
    """Saves the question and a streaming answer with its feed, or refuses if a turn of this
    conversation is already running. A known client_id joins its turn instead. The turn
    speaks the question's language in its feed and to the model when Glassbox writes it,
    else `language` (by default the active one). `guard` runs first: what it raises stops
    the turn."""
    if guard is not None:
        guard()
    language = language or translation.get_language() or settings.LANGUAGE_CODE
    if client_id is not None:
        joined = _turn_of_client(conversation, client_id)
        if joined is not None:
            return joined
    question = question_clean(text)
    # One language per feed: the question's, when Glassbox writes it, as the model answers it.
    language = written_language(question) or language
    _check_limits(conversation.owner_id)
    try:
        return _turn_create(conversation, question, client_id, language)
    except IntegrityError:
        # Only a turn that blocks us is worth checking for a dead process.
        if conversation.messages.filter(state=Message.State.WAITING).exists():
            raise TurnRejected(
                _("A tool call is waiting for your approval: approve or deny it first.")
            ) from None
        if not dead_turns_recover(conversation_id=conversation.pk):
            raise TurnRejected(
                _(
                    "The agent is still working on the previous question. "
                    "Wait for it to finish, then ask again."
                )
            ) from None
    return _turn_create(conversation, question, client_id, language)


def admit_again(
    *, conversation: Conversation, answer_id: int, language: str | None = None
) -> StartedTurn:
    """A new answer to the question of the conversation's last answer, replacing it."""
    language = language or translation.get_language() or settings.LANGUAGE_CODE
    last = conversation.messages.order_by("-id").first()
    if last is None or last.pk != answer_id or last.role != Message.Role.ASSISTANT:
        raise TurnRejected(_("Only the last answer can be regenerated."))
    if last.state in Message.OPEN_STATES:
        raise TurnRejected(_("That answer is still being written."))
    question = conversation.messages.filter(id__lt=last.pk).order_by("-id").first()
    assert question is not None  # an answer always follows its question
    language = written_language(question.content) or language
    _check_limits(conversation.owner_id)
    try:
        with transaction.atomic():
            answer = answer_open(conversation=conversation, language=language, replaces=last)
    except IntegrityError:
        raise TurnRejected(
            _("The agent is still working on the previous question. Wait for it to finish.")
        ) from None
    return StartedTurn(question=question, answer=answer, replaces=last.pk)


def _check_limits(owner_id: int) -> None:
    # Read from the feeds, one per turn and indexed by owner: counting the user's messages
    # read their whole history on every question. A deleted conversation's turns count no
    # more: its owner cannot see or stop them. A regenerated answer is a turn too.
    running, asked = _counts(owner_id)
    # Turns of a process that died count only until they are found dead.
    if running >= settings.GLASSBOX_MAX_CONCURRENT_TURNS and dead_turns_recover(owner_id=owner_id):
        running, asked = _counts(owner_id)
    if running >= settings.GLASSBOX_MAX_CONCURRENT_TURNS:
        raise TurnLimited(
            ngettext(
                "You already have %(count)d answer in progress; "
                "wait for it to finish, then ask again.",
                "You already have %(count)d answers in progress; "
                "wait for one to finish, then ask again.",
                running,
            )
            % {"count": running}
        )
    _check_daily_tokens(owner_id)
    if asked >= settings.GLASSBOX_TURNS_PER_MINUTE:
        raise TurnLimited(
            ngettext(
                "You have asked %(count)d question in the last minute, the most allowed; "
                "wait a moment, then ask again.",
                "You have asked %(count)d questions in the last minute, the most allowed; "
                "wait a moment, then ask again.",
                asked,
            )
            % {"count": asked}
        )


def _counts(owner_id: int) -> tuple[int, int]:
    """The user's running turns and the turns they began in the last minute."""
    return running_and_recent(owner_id, timezone.now() - timedelta(minutes=1))


def tokens_today(owner_id: int) -> int:
    """Tokens the user's turns used since midnight UTC; a turn with unknown usage counts 0."""
    return tokens_since(owner_id, _midnight())


def _midnight() -> datetime:
    return timezone.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _check_daily_tokens(owner_id: int) -> None:
    limit = settings.GLASSBOX_DAILY_TOKENS
    if not limit:
        return
    used = tokens_today(owner_id)
    if used < limit:
        return
    wait = _midnight() + timedelta(days=1) - timezone.now()
    hours, minutes = divmod(math.ceil(wait.total_seconds() / 60), 60)
    raise TurnLimited(
        _(
            "You have used %(used)s of your %(limit)s tokens for today. The budget starts "
            "again at midnight UTC, in %(hours)d h %(minutes)d min."
        )
        % {"used": _grouped(used), "limit": _grouped(limit), "hours": hours, "minutes": minutes}
    )


def _turn_of_client(conversation: Conversation, client_id: uuid.UUID) -> StartedTurn | None:
    answer = conversation.messages.filter(client_id=client_id).select_related("feed").first()
    if answer is None:
        return None
    question = conversation.messages.filter(id__lt=answer.pk).order_by("-id").first()
    assert question is not None  # an answer always follows its question
    return StartedTurn(question=question, answer=answer, joined=True)


@transaction.atomic
def _turn_create(
    conversation: Conversation, text: str, client_id: uuid.UUID | None, language: str
) -> StartedTurn:
    question = Message(conversation=conversation, role=Message.Role.USER, content=text)
    insert_row(question)
    answer = answer_open(conversation=conversation, language=language, client_id=client_id)
    return StartedTurn(question=question, answer=answer)
