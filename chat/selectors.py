"""Reads of chat data, always scoped to the user who asks."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, Exists, F, Max, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from activity.models import ActivityEvent, ActivityFeed
from activity.preferences import FeedPrefs
from activity.presentation import visible_lines
from activity.selectors import aevents_by_feed, events_by_feed
from chat.agent.memory import trim, turn_messages
from chat.models import ContactRequest, Conversation, Message


def conversations_of(user, *, archived: bool = False, query: str = "") -> QuerySet[Conversation]:
    """The user's conversations with what the list shows (last activity, turns, whether a
    tool failed), newest first; with a query, ranked by how well their messages match."""
    conversations = (
        Conversation.objects.filter(owner=user, archived_at__isnull=not archived)
        .annotate(
            last_activity=Coalesce(Max("messages__created_at"), "created_at"),
            turn_count=Count("messages", filter=Q(messages__role=Message.Role.USER)),
            first_question=Subquery(
                Message.objects.filter(conversation=OuterRef("pk"), role=Message.Role.USER)
                .order_by("id")
                .values("content")[:1]
            ),
            tool_failed=Exists(
                ActivityFeed.objects.filter(
                    conversation_id=OuterRef("pk"), failed_tool_count__gt=0
                )
            ),
        )
        .order_by("-last_activity", "-created_at")
    )
    terms = query.split()[:8]
    if not terms:
        return conversations
    if connection.vendor == "postgresql":
        return _ranked_by_postgres(conversations, " ".join(terms))
    return _ranked_by_term_counts(conversations, terms)


def _ranked_by_postgres(conversations, query: str):
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    # Any of the words matches and more matches rank higher, as in the SQLite fallback. The
    # "simple" configuration: no stemming for one language, since answers come in many.
    terms = [SearchQuery(term, search_type="plain", config="simple") for term in query.split()]
    search = terms[0]
    for term in terms[1:]:
        search |= term
    matching = (
        Message.objects.annotate(vector=SearchVector("content", config="simple"))
        .filter(conversation=OuterRef("pk"), vector=search)
        .annotate(rank=SearchRank(F("vector"), search))
    )
    best = matching.order_by("-rank").values("rank")[:1]
    return (
        conversations.annotate(rank=Subquery(best))
        .filter(rank__isnull=False)
        .order_by("-rank", "-last_activity")
    )


def _ranked_by_term_counts(conversations, terms: list[str]):
    """Without PostgreSQL: how many of the words each conversation's messages contain, then
    how often, then recency."""
    matches = [
        Exists(Message.objects.filter(conversation=OuterRef("pk"), content__icontains=term))
        for term in terms
    ]
    hits = [
        Count("messages", filter=Q(messages__content__icontains=term), distinct=True)
        for term in terms
    ]
    words = sum(Case(When(match, then=1), default=0) for match in matches)
    return (
        conversations.annotate(words=words, hits=sum(hits))
        .filter(words__gt=0)
        .order_by("-words", "-hits", "-last_activity")
    )


def conversation_for(user, conversation_id) -> Conversation:
    """The user's own conversation, or 404: another user's conversation does not exist."""
    return get_object_or_404(Conversation, pk=conversation_id, owner=user)


def _with_contact(messages: QuerySet[Message]) -> QuerySet[Message]:
    return messages.select_related("feed").annotate(
        contact_sent=Exists(ContactRequest.objects.filter(message=OuterRef("pk")))
    )


PAGE_MESSAGES = 40


@dataclass
class History:
    messages: list[Message]
    # The id to ask `before=` for the turns before these, or None at the beginning.
    earlier: int | None


def messages_with_feeds(
    conversation: Conversation,
    prefs: FeedPrefs,
    *,
    before: int | None = None,
    starting_at: int | None = None,
    limit: int = PAGE_MESSAGES,
) -> History:
    """A window of the conversation, oldest first, each answer with its feed's lines (two
    queries, whatever the number of turns): the latest turns, the turns before `before`, or
    everything from the turn of message `starting_at` on. A window never splits a turn."""
    messages = _with_contact(conversation.messages.all())
    if starting_at is not None:
        first = _question_of(conversation, starting_at) or starting_at
        window = list(messages.filter(id__gte=first).order_by("id"))
    else:
        if before is not None:
            messages = messages.filter(id__lt=_question_of(conversation, before) or before)
        window = list(messages.order_by("-id")[: limit + 1])[::-1]
        if len(window) > limit:
            window = window[1:]
        # An answer whose question is not in the window waits for the earlier page.
        while window and window[0].role == Message.Role.ASSISTANT:
            window = window[1:]
    earlier = None
    if window and conversation.messages.filter(id__lt=window[0].pk).exists():
        earlier = window[0].pk
    _attach_feeds(window, prefs)
    return History(window, earlier)


def _question_of(conversation: Conversation, message_id: int) -> int | None:
    """The id of the question that opens the turn holding this message."""
    return (
        conversation.messages.filter(id__lte=message_id, role=Message.Role.USER)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )


def _attach_feeds(messages: list[Message], prefs: FeedPrefs) -> None:
    rows = events_by_feed(m.feed_id for m in messages)
    question = ""
    for message in messages:
        _attach_lines(message, rows.get(message.feed_id, []), prefs)
        if message.role == Message.Role.USER:
            question = message.content
        else:
            message.question_text = question


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
    rows = await aevents_by_feed([message.feed_id])
    _attach_lines(message, rows.get(message.feed_id, []), prefs)
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
    rows = await aevents_by_feed((m.feed_id for m in earlier), kinds=["tool_call", "tool_result"])
    messages = []
    for message in earlier:
        events = [row.to_event() for row in rows.get(message.feed_id, [])]
        messages += turn_messages(message.role, message.content, events)
    return trim(messages, settings.GLASSBOX_HISTORY_CHARS)
