"""Writes to chat data. Keyword-only, typed, one place for each."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from activity.events import Status, with_seq
from activity.models import ActivityEvent, ActivityFeed
from chat.models import ContactRequest, Conversation, Message
from chat.recovery import dead_turns_recover


class TurnRejected(Exception):
    """A turn that cannot start; the message is shown to the user as it is."""

    status = 409


class TurnLimited(TurnRejected):
    """Too many turns for one user, at once or in the last minute."""

    status = 429


class QuestionInvalid(ValueError):
    """A question that cannot be asked as it is; the text says why."""


@dataclass(frozen=True, slots=True)
class StartedTurn:
    question: Message
    answer: Message
    # True when the client_id named a turn that already existed: nothing new was started.
    joined: bool = False


def question_clean(text: object) -> str:
    if not isinstance(text, str):
        raise QuestionInvalid(_("The question must be text."))
    text = text.strip()
    if not text:
        raise QuestionInvalid(_("Type a question first."))
    limit = settings.GLASSBOX_MAX_MESSAGE_CHARS
    if len(text) > limit:
        raise QuestionInvalid(
            _("That question is %(length)s characters long; the limit is %(limit)s.")
            % {"length": _grouped(len(text)), "limit": _grouped(limit)}
        )
    return text


def _grouped(number: int) -> str:
    return number_format(number, force_grouping=True)


def conversation_create(*, owner) -> Conversation:
    return Conversation.objects.create(owner=owner)


def conversation_rename(*, conversation: Conversation, title: str) -> Conversation:
    title = " ".join(title.split())
    if not title:
        raise QuestionInvalid(_("A title needs at least one word."))
    if len(title) > 200:
        raise QuestionInvalid(_("A title has at most 200 characters."))
    conversation.title = title
    conversation.save(update_fields=["title", "updated_at"])
    return conversation


def conversation_archive(*, conversation: Conversation, archived: bool) -> Conversation:
    conversation.archived_at = timezone.now() if archived else None
    conversation.save(update_fields=["archived_at"])
    return conversation


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Hides the conversation and its feeds from the owner at once; admins keep auditing them
    until the retention period ends (purge_deleted)."""
    Conversation.all_objects.filter(pk=conversation.pk).update(deleted_at=timezone.now())
    ActivityFeed.objects.filter(conversation_id=conversation.pk).update(hidden_from_owner=True)


@transaction.atomic
def deleted_conversations_purge() -> int:
    """Removes for good what was deleted longer ago than GLASSBOX_RETENTION_DAYS: the
    conversations, their messages and contact requests, and their feeds with every event."""
    cutoff = timezone.now() - timedelta(days=settings.GLASSBOX_RETENTION_DAYS)
    expired = list(
        Conversation.all_objects.filter(deleted_at__lt=cutoff).values_list("pk", flat=True)
    )
    if not expired:
        return 0
    feed_ids = list(
        ActivityFeed.objects.filter(conversation_id__in=expired).values_list("pk", flat=True)
    )
    # Messages protect their feeds, so they go first.
    Message.objects.filter(conversation_id__in=expired).delete()
    ActivityEvent.objects.filter(feed_id__in=feed_ids).delete()
    ActivityFeed.objects.filter(pk__in=feed_ids).delete()
    Conversation.all_objects.filter(pk__in=expired).delete()
    return len(expired)


def turn_start(
    *,
    conversation: Conversation,
    text: str,
    client_id: uuid.UUID | None = None,
    language: str | None = None,
) -> StartedTurn:
    """Saves the question and a streaming answer with its feed, or refuses if a turn of this
    conversation is already running. A known client_id joins its turn instead. The turn
    speaks `language` (by default the active one) in its feed and to the model."""
    language = language or translation.get_language() or settings.LANGUAGE_CODE
    if client_id is not None:
        joined = _turn_of_client(conversation, client_id)
        if joined is not None:
            return joined
    _check_limits(conversation.owner_id)
    try:
        return _turn_create(conversation, text, client_id, language)
    except IntegrityError:
        # Only a turn that blocks us is worth checking for a dead process.
        if not dead_turns_recover(conversation=conversation):
            raise TurnRejected(
                _(
                    "The agent is still working on the previous question. "
                    "Wait for it to finish, then ask again."
                )
            ) from None
    return _turn_create(conversation, text, client_id, language)


def _check_limits(owner_id: int) -> None:
    mine = Message.objects.filter(conversation__owner_id=owner_id)
    running = mine.filter(state=Message.State.STREAMING).count()
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
    minute_ago = timezone.now() - timedelta(minutes=1)
    asked = mine.filter(role=Message.Role.USER, created_at__gte=minute_ago).count()
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


def _turn_of_client(conversation: Conversation, client_id: uuid.UUID) -> StartedTurn | None:
    answer = conversation.messages.filter(client_id=client_id).select_related("feed").first()
    if answer is None:
        return None
    question = conversation.messages.filter(id__lt=answer.pk).order_by("-id").first()
    return StartedTurn(question=question, answer=answer, joined=True)


@transaction.atomic
def _turn_create(
    conversation: Conversation, text: str, client_id: uuid.UUID | None, language: str
) -> StartedTurn:
    question = Message.objects.create(
        conversation=conversation, role=Message.Role.USER, content=text
    )
    feed = ActivityFeed.objects.create(
        owner_id=conversation.owner_id, conversation_id=conversation.pk, language=language
    )
    answer = Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        feed=feed,
        client_id=client_id,
    )
    return StartedTurn(question=question, answer=answer)


class ContactRefused(Exception):
    """The contact form cannot be sent for this answer; the text says why."""


CONTACT_TOOL = "request_contact_form"


def contact_form_requested(message: Message) -> bool:
    return any(
        getattr(e, "tool", "") == CONTACT_TOOL and getattr(e, "state", "") == "done"
        for e in getattr(message, "feed_events", [])
    )


@transaction.atomic
def contact_request_create(
    *, message: Message, name: str, email: str, body: str
) -> ContactRequest:
    """Stores the request and records it at the end of the turn's feed, for the audit."""
    if ContactRequest.objects.filter(message=message).exists():
        raise ContactRefused(_("This contact request was already sent."))
    request = ContactRequest.objects.create(
        owner_id=message.conversation.owner_id,
        message=message,
        name=name,
        email=email,
        body=body,
    )
    feed = ActivityFeed.objects.select_for_update().get(pk=message.feed_id)
    last = feed.events.order_by("-seq").values_list("seq", flat=True).first() or 0
    # In the turn's language, like every other line of its feed.
    with translation.override(feed.language):
        sent = Status(
            icon="📨", message=_("Contact request sent"), state="done", tool=CONTACT_TOOL
        )
    ActivityEvent.from_event(feed, with_seq(sent, last + 1)).save()
    ActivityFeed.objects.filter(pk=feed.pk).update(event_count=last + 1)
    return request
