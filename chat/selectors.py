"""Reads of chat data, always scoped to the user who asks."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from activity.models import ActivityEvent
from activity.preferences import FeedPrefs
from activity.presentation import visible_lines
from chat.agent.memory import trim, turn_messages
from chat.models import ContactRequest, Conversation, Message


def conversations_of(user) -> QuerySet[Conversation]:
    return (
        Conversation.objects.filter(owner=user)
        .annotate(
            last_activity=Coalesce(Max("messages__created_at"), "created_at"),
            turn_count=Count("messages", filter=Q(messages__role=Message.Role.USER)),
        )
        .order_by("-last_activity", "-created_at")
    )


def conversation_for(user, conversation_id) -> Conversation:
    """The user's own conversation, or 404: another user's conversation does not exist."""
    return get_object_or_404(Conversation, pk=conversation_id, owner=user)


def _with_contact(messages: QuerySet[Message]) -> QuerySet[Message]:
    return messages.select_related("feed").annotate(
        contact_sent=Exists(ContactRequest.objects.filter(message=OuterRef("pk")))
    )


def messages_with_feeds(conversation: Conversation, prefs: FeedPrefs) -> list[Message]:
    """Every message in order, each answer with its feed's lines (two queries, whatever the
    number of turns)."""
    messages = list(_with_contact(conversation.messages.order_by("created_at", "id")))
    feed_ids = [m.feed_id for m in messages if m.feed_id]
    rows: dict[int, list[ActivityEvent]] = {feed_id: [] for feed_id in feed_ids}
    if feed_ids:
        for row in ActivityEvent.objects.filter(feed_id__in=feed_ids).order_by("feed_id", "seq"):
            rows[row.feed_id].append(row)
    question = ""
    for message in messages:
        _attach_lines(message, rows.get(message.feed_id, []), prefs)
        if message.role == Message.Role.USER:
            question = message.content
        else:
            message.question_text = question
    return messages


def answer_with_feed(conversation: Conversation, message_id: int, prefs: FeedPrefs) -> Message:
    """One answer of this conversation with its feed's lines, or 404."""
    message = get_object_or_404(
        _with_contact(conversation.messages.filter(role=Message.Role.ASSISTANT)), pk=message_id
    )
    _attach_lines(message, list(message.feed.events.order_by("seq")), prefs)
    return message


async def amessage_with_feed(message_id: int, prefs: FeedPrefs) -> Message:
    message = await _with_contact(Message.objects.all()).aget(pk=message_id)
    question = (
        Message.objects.filter(
            conversation_id=message.conversation_id, id__lt=message.pk, role=Message.Role.USER
        )
        .order_by("-id")
        .values_list("content", flat=True)
    )
    message.question_text = await question.afirst() or ""
    rows = [row async for row in ActivityEvent.objects.filter(feed_id=message.feed_id)]
    _attach_lines(message, sorted(rows, key=lambda row: row.seq), prefs)
    return message


def _attach_lines(message: Message, rows: list[ActivityEvent], prefs: FeedPrefs) -> None:
    message.feed_events = [row.to_event() for row in rows]
    message.feed_lines = visible_lines(
        message.feed_events,
        times=[row.created_at for row in rows],
        finished_at=message.feed.finished_at if message.feed_id else None,
        detail=prefs.detail,
        width=prefs.line_width,
    )


async def amodel_history(answer: Message) -> list[dict]:
    """The conversation up to this answer (its question included) as chat messages for the
    model, with earlier tool calls and results, trimmed from the oldest turn to the budget."""
    earlier = [
        m
        async for m in Message.objects.filter(
            conversation_id=answer.conversation_id, id__lt=answer.id
        ).order_by("id")
    ]
    feed_ids = [m.feed_id for m in earlier if m.feed_id]
    events: dict[int, list] = {feed_id: [] for feed_id in feed_ids}
    async for event in ActivityEvent.objects.filter(
        feed_id__in=feed_ids, kind__in=["tool_call", "tool_result"]
    ).order_by("feed_id", "seq"):
        events[event.feed_id].append(event.to_event())
    messages = []
    for message in earlier:
        messages += turn_messages(message.role, message.content, events.get(message.feed_id, []))
    return trim(messages, settings.GLASSBOX_HISTORY_CHARS)
