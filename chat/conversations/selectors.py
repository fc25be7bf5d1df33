"""Reads of chat data, always scoped to the user who asks."""

from __future__ import annotations

import operator
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from typing import Any, ClassVar

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, Exists, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.functions import Coalesce
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import translation
from django.utils.translation import gettext as _

from activity.auditing.export import FeedData, feed_data
from activity.models import ActivityEvent, ActivityFeed
from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.presentation import Line, visible_lines
from activity.recording.events import (
    FEEDBACK_ARG,
    PLAN_LINE,
    AppView,
    RecordedEvent,
    Score,
    Status,
    ToolCall,
    ToolResult,
)
from activity.selectors import (
    aevents_by_feed,
    areasoning_by_feed,
    current_ratings,
    events_by_feed,
    reasoning_by_feed,
)
from chat.conversations.search_index import MessageOwner, message_vector, words_query
from chat.models import ContactRequest, Conversation, Message, ToolApproval


def conversations_of(
    user: Any, *, archived: bool = False, query: str = ""
) -> QuerySet[Conversation]:
    """The user's conversations with what the list shows (last activity, turns, whether a
    tool failed), newest first; with a query, ranked by how well their messages match."""
    # The stubs see the model cache its own first_question (display_title): the same name.
    # Subqueries, not a join grouped by conversation: a page reads its rows' counts alone,
    # and the latest message of each conversation is one index entry (bench/history_scale.py:
    # the join read every message of a user with 10,000 conversations for each page).
    latest = Message.objects.filter(conversation=OuterRef("pk")).order_by("-created_at")
    questions = Message.objects.filter(conversation=OuterRef("pk"), role=Message.Role.USER)
    conversations = (
        Conversation.objects.filter(owner=user, archived_at__isnull=not archived)
        .annotate(  # type: ignore[no-redef]
            last_activity=Coalesce(Subquery(latest.values("created_at")[:1]), "created_at"),
            turn_count=Coalesce(
                Subquery(
                    questions.order_by().values("conversation").annotate(n=Count("pk")).values("n")
                ),
                0,
            ),
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
            waiting=Exists(
                Message.objects.filter(conversation=OuterRef("pk"), state=Message.State.WAITING)
            ),
            # A denial is a decision, not a tool failure (chat.asks.approvals).
            denied=Exists(
                ToolApproval.objects.filter(
                    answer__conversation=OuterRef("pk"), decision=ToolApproval.Decision.DENY
                )
            ),
        )
        .order_by("-last_activity", "-created_at", "-pk")
    )
    terms = query.split()[:8]
    if not terms:
        return conversations
    if connection.vendor == "postgresql":
        return _ranked_by_postgres(conversations, user, terms)
    return _ranked_by_term_counts(conversations, terms)


def _ranked_by_postgres(conversations, owner: Any, words: list[str]):
    """How many of the words each conversation's messages (or title) hold, then recency, as
    in the SQLite fallback. Messages come from the full-text index keyed by owner
    (chat/migrations/0022_message_owner_search.py): the asker's matches alone, every word
    in one look for the filter. Looking each word up in an index of every user's messages
    read all their matches (bench/history_scale.py: 227 ms for a word in 214,000 messages,
    414 ms for two words, at 10,000 conversations)."""

    def holding(found) -> Q:
        messages = (
            Message.objects.alias(owner_column=MessageOwner(), vector=message_vector())
            .filter(owner_column=owner.pk, vector=found)
            .values("conversation_id")
        )
        return Q(pk__in=messages)

    # A word in the title the user gave counts as in a message.
    titled = [Q(title__icontains=word) for word in words]
    anywhere = reduce(operator.or_, titled, holding(words_query(words)))
    if len(words) == 1:
        # Every match holds the one word: by recency, without looking the word up again.
        return conversations.filter(anywhere)
    # Each word's count is asked of the matches alone (the select list follows the filter).
    counts = sum(
        Case(When(holding(words_query([word])) | title, then=1), default=0)
        for word, title in zip(words, titled, strict=True)
    )
    return (
        conversations.filter(anywhere)
        .annotate(words=counts)
        .order_by("-words", "-last_activity", "-created_at", "-pk")
    )


def _ranked_by_term_counts(conversations, terms: list[str]):
    """Without PostgreSQL: how many of the words each conversation's messages (or title)
    contain, then how often, then recency."""
    # A word in the title the user gave counts as in a message.
    matches = [
        Q(Exists(Message.objects.filter(conversation=OuterRef("pk"), content__icontains=term)))
        | Q(title__icontains=term)
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
        .order_by("-words", "-hits", "-last_activity", "-created_at", "-pk")
    )


def conversation_for(user, conversation_id) -> Conversation:
    """The user's own conversation, or 404: another user's conversation does not exist."""
    return get_object_or_404(Conversation, pk=conversation_id, owner=user)


def _with_contact(messages: QuerySet[Message]) -> QuerySet[Message]:
    return messages.select_related("feed").annotate(
        contact_sent=Exists(ContactRequest.objects.filter(message=OuterRef("pk"))),
        superseded=Exists(Message.objects.filter(replaces=OuterRef("pk"))),
    )


CONTACT_TOOL = "request_contact_form"


@dataclass(frozen=True, slots=True)
class Ratings:
    """What the asker can rate on a finished answer (the answer, "", and each tool call it
    made) and the rating each target has now: their latest."""

    # The template that draws one target's rating (the feed's lines include it by this name).
    template: ClassVar[str] = "chat/_rating.html"

    conversation_id: uuid.UUID
    answer_id: int
    # The call each line that carries a call's rating stands for, by line key: its last line.
    lines: dict[str, str] = field(default_factory=dict)
    current: dict[str, Score] = field(default_factory=dict)

    @classmethod
    def of(
        cls, message: Message, events: Sequence[RecordedEvent], lines: Sequence[Line]
    ) -> Ratings | None:
        """None while the answer runs or when it has no feed (nothing to rate yet), or when
        ratings are switched off (GLASSBOX_RATINGS)."""
        if not settings.GLASSBOX_RATINGS:
            return None
        if message.state in Message.OPEN_STATES or message.feed is None:
            return None
        calls = {e.call_id for e in events if isinstance(e, ToolCall)}
        # The plan's line stands for the agent's plan, not a call: it has no rating of its own.
        last = {
            line.call_id: line.key
            for line in lines
            if line.call_id in calls and line.key != PLAN_LINE
        }
        return cls(
            conversation_id=message.conversation_id,
            answer_id=message.pk,
            lines={key: call_id for call_id, key in last.items()},
            current=current_ratings(events, by_id=message.feed.owner_id),
        )


@dataclass(slots=True)
class TurnView:
    """An answer as people see it: its feed's events and visible lines, the question it
    answers (for Retry), and whether the contact form it opened was sent. `content` is the
    text so far, which may be ahead of the stored one while the turn runs."""

    message: Message
    content: str
    events: list[RecordedEvent]
    lines: list[Line]
    question: str = ""
    question_id: int | None = None
    contact_sent: bool = False
    # Regenerated: an earlier version of the answer that follows it.
    superseded: bool = False
    # The viewer's choice: tokens and cost on the folded feed.
    show_usage: bool = False
    # The asker's ratings, once the answer has finished.
    ratings: Ratings | None = None
    # Progress mode (seed 001): the finished answer takes the draft's place, its folded feed
    # one click away below it rather than above.

    role = Message.Role.ASSISTANT

    @property
    def pk(self) -> int:
        return self.message.pk

    @property
    def state(self) -> str:
        return self.message.state

    @property
    def feed(self) -> ActivityFeed | None:
        return self.message.feed

    @property
    def conversation_id(self) -> uuid.UUID:
        return self.message.conversation_id

    @property
    def dom_id(self) -> str:
        return self.message.dom_id

    @property
    def contact_form_requested(self) -> bool:
        return any(
            isinstance(e, Status) and e.tool == CONTACT_TOOL and e.state == "done"
            for e in self.events
        )


PAGE_MESSAGES = 40


@dataclass
class History:
    # Questions as they are stored, answers as TurnViews, oldest first.
    messages: list[Message | TurnView]
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
    rows = events_by_feed(m.feed_id for m in window)
    thoughts = _reasoning(prefs, [m.feed_id for m in window])
    shown: list[Message | TurnView] = []
    question: Message | None = None
    for message in window:
        if message.role == Message.Role.USER:
            question = message
            shown.append(message)
        else:
            feed_id = message.feed_id or 0
            view = _turn_view(message, rows.get(feed_id, []), prefs, question, thoughts[feed_id])
            shown.append(view)
    return History(shown, earlier)


def _question_of(conversation: Conversation, message_id: int) -> int | None:
    """The id of the question that opens the turn holding this message."""
    return (
        conversation.messages.filter(id__lte=message_id, role=Message.Role.USER)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )


def answer_with_feed(conversation: Conversation, message_id: int, prefs: FeedPrefs) -> TurnView:
    """One answer of this conversation with its feed's lines, or 404."""
    message = get_object_or_404(
        _with_contact(conversation.messages.filter(role=Message.Role.ASSISTANT)), pk=message_id
    )
    events = list(message.answer_feed.events.order_by("seq"))
    thoughts = _reasoning(prefs, [message.feed_id])
    return _turn_view(message, events, prefs, reasoning=thoughts[message.feed_id or 0])


async def aturn_view(
    message_id: int,
    prefs: FeedPrefs,
    pending: Callable[[], tuple[Sequence[ActivityEvent], int]] = lambda: ((), 0),
) -> TurnView:
    """One answer as stored, with the question it answers. `pending` gives its events not
    written yet (a running turn's, chat.turns.registry) and the last seq numbered: asked
    after the stored ones are read and with no wait before the caller goes on, so the view
    holds every event up to that moment, and none that came after text the caller reads
    next."""
    message = await _with_contact(Message.objects.all()).aget(pk=message_id)
    question = await (
        Message.objects.filter(
            conversation_id=message.conversation_id, id__lt=message.pk, role=Message.Role.USER
        )
        .order_by("-id")
        .afirst()
    )
    thoughts = (
        await areasoning_by_feed([message.feed_id]) if prefs.show_reasoning == "full" else {}
    )
    feed_id = message.feed_id or 0
    for _attempt in range(5):
        stored = (await aevents_by_feed([message.feed_id])).get(feed_id, [])
        if message.state in Message.OPEN_STATES and not await _still_open(message.pk):
            # It ended while its events were read: its row is read again, then its events,
            # all written with its end. Else a new tab showed every line and old text.
            message = await _with_contact(Message.objects.all()).aget(pk=message_id)
            continue
        unsaved, numbered = pending()
        last = stored[-1].seq if stored else 0
        # Rows written between the read and now are in neither: read again.
        if (unsaved[0].seq if unsaved else numbered + 1) <= last + 1:
            break
    every = [*stored, *(row for row in unsaved if row.seq > last)]
    return _turn_view(message, every, prefs, question, thoughts.get(feed_id))


async def _still_open(message_id: int) -> bool:
    state = await Message.objects.values_list("state", flat=True).aget(pk=message_id)
    return state in Message.OPEN_STATES


def _reasoning(prefs: FeedPrefs, feed_ids: list[int | None]) -> defaultdict[int, dict[str, str]]:
    """The reasoning of these feeds' 💭 lines, read only when the site shows it."""
    found = reasoning_by_feed(feed_ids) if prefs.show_reasoning == "full" else {}
    return defaultdict(dict, found)


def _turn_view(
    message: Message,
    rows: list[ActivityEvent],
    prefs: FeedPrefs,
    question: Message | None = None,
    reasoning: dict[str, str] | None = None,
) -> TurnView:
    events = [row.to_event() for row in rows]
    # The lines written on reading (a decision's) speak the feed's language, as the rest do.
    with translation.override(message.feed.language) if message.feed else nullcontext():
        lines = visible_lines(
            events,
            times=[row.created_at for row in rows],
            finished_at=message.feed.finished_at if message.feed else None,
            detail=prefs.detail,
            width=prefs.line_width,
            show_reasoning=prefs.show_reasoning,
            render=prefs.render,
            reasoning=reasoning,
            cut=message.state in Message.CUT_STATES,
            log_level=prefs.mcp_log_level,
        )
    return TurnView(
        message=message,
        content=message.content,
        events=events,
        lines=lines,
        question=question.content if question else "",
        question_id=question.pk if question else None,
        contact_sent=bool(getattr(message, "contact_sent", False)),
        superseded=bool(getattr(message, "superseded", False)),
        show_usage=prefs.show_usage,
        ratings=Ratings.of(message, events, lines) if prefs.show_ratings else None,
    )


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A message with its feed in the event protocol, as the API and downloads give it."""

    id: int
    role: str
    content: str
    state: str
    created_at: datetime
    feed: FeedData | None
    # A regenerated answer and the one it replaced name each other.
    replaces: int | None = None
    replaced_by: int | None = None


def message_records(
    conversation: Conversation, *, answer: int | None = None
) -> list[MessageRecord]:
    """The conversation's messages (or one answer) with their feeds, in two queries."""
    messages = conversation.messages.select_related("feed").order_by("id")
    if answer is not None:
        messages = messages.filter(pk=answer)
    window = list(messages)
    rows = events_by_feed(m.feed_id for m in window)
    username = conversation.owner.get_username()
    replaced_by = {m.replaces_id: m.pk for m in window if m.replaces_id}
    return [
        MessageRecord(
            id=m.pk,
            role=m.role,
            content=m.content,
            state=m.state,
            created_at=m.created_at,
            feed=feed_data(m.feed, rows[m.feed.pk], message_id=m.pk, username=username)
            if m.feed
            else None,
            replaces=m.replaces_id,
            replaced_by=replaced_by.get(m.pk),
        )
        for m in window
    ]


@dataclass(frozen=True)
class AppShown:
    """What one call's own interface (MCP Apps) needs to be shown again: its snapshot, and
    the call's input and result as they were recorded."""

    app: AppView
    arguments: dict[str, Any]
    result: ToolResult | None
    feed_id: int
    conversation_id: uuid.UUID
    answer_id: int


def app_shown(user, message_id: int, call_id: str) -> AppShown:
    """The interface a call of one of the user's answers showed, or 404 (another user's, or
    none)."""
    message = get_object_or_404(
        Message.objects.select_related("conversation"),
        pk=message_id,
        role="assistant",
        conversation__owner=user,
        conversation__deleted_at__isnull=True,
    )
    rows = ActivityEvent.objects.filter(
        feed_id=message.feed_id,
        call_id=call_id,
        kind__in=("app", "tool_call", "tool_result"),
    ).order_by("seq")
    events = [row.to_event() for row in rows] if message.feed_id else []
    apps = [event for event in events if isinstance(event, AppView)]
    if not apps:
        raise Http404(_("This answer has no such app."))
    calls = [event for event in events if isinstance(event, ToolCall)]
    results = [event for event in events if isinstance(event, ToolResult)]
    arguments = dict(calls[0].arguments) if calls else {}
    arguments.pop(FEEDBACK_ARG, None)
    result = results[-1] if results else None
    assert message.feed_id is not None  # it has an app event
    return AppShown(
        apps[-1], arguments, result, message.feed_id, message.conversation_id, message.pk
    )


def app_notes_made(feed_id: int, call_id: str) -> int:
    """How many notes the app of `call_id` added (chat.turns.app_notes)."""
    return ActivityEvent.objects.filter(feed_id=feed_id, call_id=call_id, kind="app_note").count()


def tool_result_of(feed_id: int, call_id: str) -> ToolResult | None:
    """The result a call of the feed recorded, if it has one yet."""
    row = ActivityEvent.objects.filter(feed_id=feed_id, call_id=call_id, kind="tool_result")
    found = row.order_by("-seq").first()
    event = found.to_event() if found is not None else None
    return event if isinstance(event, ToolResult) else None


def app_calls_made(feed_id: int) -> int:
    """How many calls the apps of a feed made (chat.turns.app_calls names them `app-…`)."""
    return ActivityEvent.objects.filter(
        feed_id=feed_id, kind="tool_call", call_id__startswith="app-"
    ).count()
