"""Writes to chat data. Keyword-only, typed, one place for each."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from activity.auditing.audit import purge
from activity.recording.events import Score, ScoreValue, Status
from activity.selectors import called_tools, feed_ids_of_conversations, feed_language
from activity.telemetry import phoenix
from activity.writing import feeds
from activity.writing.commits import Ride
from chat.conversations.access import conversations_closed
from chat.conversations.selectors import CONTACT_TOOL
from chat.models import ContactRequest, Conversation, Message
from project.sql import insert_row, update_row
from project.text_rules import looks_empty, unstorable, without_bidi_controls


class TitleInvalid(ValueError):
    """A title that cannot be saved as it is; the text says why."""


def conversation_create(*, owner) -> Conversation:
    return Conversation.objects.create(owner=owner)


def conversation_discard(*, conversation: Conversation) -> None:
    """Removes a conversation made for a first question that was refused: it holds nothing,
    and a conversation that does hold a message is left alone."""
    Conversation.all_objects.filter(pk=conversation.pk, messages__isnull=True).delete()


def title_clean(title: str) -> str:
    """A title as it is stored: one line, no display-reordering controls, something to see."""
    problem = unstorable(title)
    if problem:
        raise TitleInvalid(problem)
    title = " ".join(without_bidi_controls(title).split())
    if looks_empty(title):
        raise TitleInvalid(_("A title needs at least one word."))
    if len(title) > 200:
        raise TitleInvalid(_("A title has at most 200 characters."))
    return title


def conversation_rename(*, conversation: Conversation, title: str) -> Conversation:
    conversation.title = title_clean(title)
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
    # Deleting it again does not restart its retention period.
    Conversation.all_objects.filter(pk=conversation.pk, deleted_at__isnull=True).update(
        deleted_at=timezone.now()
    )
    feeds.hide_from_owner(conversation_id=conversation.pk)
    # A bulk update sends no model signal: its open sockets are told here.
    conversations_closed.send(Conversation, conversation_ids=[conversation.pk])


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
    feed_ids = feed_ids_of_conversations(expired)
    # Messages protect their feeds, so they go first.
    Message.objects.filter(conversation_id__in=expired).delete()
    purge(feed_ids)
    Conversation.all_objects.filter(pk__in=expired).delete()
    return len(expired)


class ContactRefused(Exception):
    """The contact form cannot be sent for this answer; the text says why."""


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
    # The view offers the form only on an answer whose feed's tool opened it.
    assert message.feed_id is not None
    language = feed_language(message.feed_id)
    # In the turn's language, like every other line of its feed.
    with translation.override(language):
        sent = Status(
            icon="📨", message=_("Contact request sent"), state="done", tool=CONTACT_TOOL
        )
    feeds.append_late(message.feed_id, sent)
    return request


# An answer's row is written by these verbs alone, whoever runs the turn (chat.turns.runner),
# decides on it (chat.asks.approvals) or closes it for a dead process (chat.turns.recovery).
# Each runs in its caller's transaction.


def answer_open(*, conversation: Conversation, language: str, **fields: Any) -> Message:
    """A streaming answer with its feed. Its rows are written by statements built once
    (project.sql.insert_row), as `create()` writes them: every question writes three."""
    feed = feeds.open_feed(
        owner_id=conversation.owner_id, conversation_id=conversation.pk, language=language
    )
    answer = Message(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        feed=feed,
        **fields,
    )
    insert_row(answer)
    return answer


def answer_extend(*, answer_id: int, text: str, written: Callable[[], None]) -> Ride:
    """The answer's text so far, written at the running turn's next group commit
    (activity.writing.commits), with whatever the other turns have pending; `written` is
    called once it is."""
    return Ride(Message, answer_id, {"content": text}, written)


def answer_pause(*, answer_id: int, content: str) -> None:
    """A turn that waits for a person: its text so far, and `waiting`."""
    Message.objects.filter(pk=answer_id).update(content=content, state=Message.State.WAITING)


def answer_resume(*, answer_id: int) -> None:
    """A waiting turn that runs again: the conversation's one open turn stays this one."""
    Message.objects.filter(pk=answer_id).update(state=Message.State.STREAMING)


def answer_end(*, answer_id: int, content: str, state: str, opened: str) -> bool:
    """The answer's final text and state, only if it is still `opened` (streaming, or
    waiting for a paused turn that is stopped): False when another process closed it."""
    return bool(update_row(Message, answer_id, {"content": content, "state": state}, state=opened))


def answer_interrupt(*, answer_id: int, held: Callable[[], str | None]) -> str | None:
    """Closes a streaming answer whose process died; the text it ends with, or None when
    another process closed it first. `held` gives what this process still held of its
    text (chat.turns.registry.given_up_with), kept when it is longer than what was written."""
    # Only one process may close a turn: the state check makes the update the lock.
    closed = Message.objects.filter(pk=answer_id, state=Message.State.STREAMING).update(
        state=Message.State.INTERRUPTED
    )
    if not closed:
        return None
    content = Message.objects.filter(pk=answer_id).values_list("content", flat=True).get()
    text = held()
    if text is not None and len(text) > len(content):
        Message.objects.filter(pk=answer_id).update(content=text)
        content = text
    return content


class RatingRefused(Exception):
    """The rating cannot be recorded; the text says why, `status` is the API's answer and
    `field` the field at fault, if one is."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def answer_rate(
    *, user: Any, answer: Message, rating: ScoreValue, note: str = "", call_id: str = ""
) -> Score:
    """Records the asker's rating of a finished answer or of one of its tool calls as a score
    at the end of its feed; a later rating of the same target counts instead of this one."""
    if not settings.GLASSBOX_RATINGS:
        raise RatingRefused(_("Ratings are switched off on this site."), status=403)
    if answer.state in Message.OPEN_STATES or answer.feed_id is None:
        raise RatingRefused(_("An answer can be rated once it has finished."), status=409)
    tools = called_tools(answer.feed_id)
    if call_id and call_id not in tools:
        raise RatingRefused(
            _("That answer made no tool call with this id."), status=404, field="call_id"
        )
    score = Score(
        call_id=call_id,
        value=rating,
        note=note,
        by=user.get_username(),
        by_id=user.pk,
        tool=tools.get(call_id, ""),
    )
    feed_id = answer.feed_id
    written = feeds.append_late(feed_id, score)
    assert isinstance(written, Score)
    transaction.on_commit(lambda: phoenix.score_given(feed_id, written))
    return written
