"""Reads of activity data scoped by who asks: pages, the REST API, exports and admin share
these, so the access rule is written once."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from weakref import WeakKeyDictionary

from django.contrib.auth import get_user_model
from django.db.models import F, Func, IntegerField, OuterRef, QuerySet, Subquery, Sum
from django.http import HttpRequest

from activity.access import is_auditor
from activity.models import ActivityEvent, ActivityFeed, FeedPreferences, ModelCall
from activity.preferences.feed_prefs import ReaderSettings
from activity.recording.events import RecordedEvent, Score, thinking_id
from project.sql import Compiled, Param

# Per request, kept only while it lives: the language middleware and the page's view share
# one read of the row.
_read: WeakKeyDictionary[HttpRequest, ReaderSettings] = WeakKeyDictionary()


def reader_settings(request: HttpRequest) -> ReaderSettings:
    """The logged-in user's feed preferences and saved language, read once per request."""
    if request not in _read:
        user_id = request.user.pk
        assert user_id is not None, "asked only for a logged-in user"
        _read[request] = ReaderSettings(*FeedPreferences.settings_for(user_id))
    return _read[request]


def feeds_visible_to(user: Any) -> QuerySet[ActivityFeed]:
    """Auditors (activity.access.is_auditor) see every feed; anyone else only their
    own."""
    feeds = ActivityFeed.objects.all()
    if not is_auditor(user):
        feeds = feeds.filter(owner=user, hidden_from_owner=False)
    # The message points at its feed; its id is read back through that reverse relation.
    return feeds.annotate(username=F("owner__username"), message_id=F("message__id"))


def feeds_filtered(
    feeds: QuerySet[ActivityFeed],
    *,
    conversation=None,
    tool: str = "",
    state: str = "",
    since=None,
    until=None,
    username: str = "",
) -> QuerySet[ActivityFeed]:
    if conversation is not None:
        feeds = feeds.filter(conversation_id=conversation)
    if tool:
        feeds = feeds.filter(events__tool=tool, events__kind="tool_call").distinct()
    if state:
        feeds = feeds.filter(state=state)
    if since is not None:
        feeds = feeds.filter(started_at__gte=since)
    if until is not None:
        feeds = feeds.filter(started_at__lt=until)
    if username:
        feeds = feeds.filter(owner__username=username)
    return feeds


def _events_of(feed_ids: Iterable[int | None], kinds: Iterable[str] | None):
    rows = ActivityEvent.objects.filter(feed_id__in=[i for i in feed_ids if i])
    if kinds is not None:
        rows = rows.filter(kind__in=list(kinds))
    return rows.order_by("feed_id", "seq")


def tools_offered_by_feed(feed_ids: Iterable[int]) -> dict[int, list[str]]:
    """The tools each feed's model requests offered, in the order first offered, in one
    query."""
    offered: dict[int, list[str]] = defaultdict(list)
    calls = ModelCall.objects.filter(feed_id__in=list(feed_ids)).order_by("feed_id", "round")
    for feed_id, names in calls.values_list("feed_id", "tools_offered"):
        offered[feed_id] += [name for name in names or () if name not in offered[feed_id]]
    return offered


def events_by_feed(
    feed_ids: Iterable[int | None], kinds: Iterable[str] | None = None
) -> dict[int, list[ActivityEvent]]:
    """Every event of these feeds in one query, grouped by feed, in seq order."""
    grouped: dict[int, list[ActivityEvent]] = defaultdict(list)
    feed_ids = [i for i in feed_ids if i]
    if not feed_ids:  # a first question: building the query costs more than running it
        return grouped
    for row in _events_of(feed_ids, kinds):
        grouped[row.feed_id].append(row)
    return grouped


async def aevents_by_feed(
    feed_ids: Iterable[int | None], kinds: Iterable[str] | None = None
) -> dict[int, list[ActivityEvent]]:
    grouped: dict[int, list[ActivityEvent]] = defaultdict(list)
    async for row in _events_of(feed_ids, kinds):
        grouped[row.feed_id].append(row)
    return grouped


def _reasoning_rows(feed_ids: Iterable[int | None]):
    rows = ModelCall.objects.filter(feed_id__in=[i for i in feed_ids if i]).exclude(reasoning="")
    return rows.values_list("feed_id", "round", "reasoning")


def reasoning_by_feed(feed_ids: Iterable[int | None]) -> dict[int, dict[str, str]]:
    """Each feed's reasoning by the id of its 💭 line, in one query."""
    grouped: dict[int, dict[str, str]] = defaultdict(dict)
    for feed_id, round_number, text in _reasoning_rows(feed_ids):
        grouped[feed_id][thinking_id(round_number)] = text
    return grouped


async def areasoning_by_feed(feed_ids: Iterable[int | None]) -> dict[int, dict[str, str]]:
    grouped: dict[int, dict[str, str]] = defaultdict(dict)
    async for feed_id, round_number, text in _reasoning_rows(feed_ids):
        grouped[feed_id][thinking_id(round_number)] = text
    return grouped


# Reads chat makes of feeds it does not own (see the contract on activity.models in
# pyproject.toml): plain values, no rows.


def feed_language(feed_id: int) -> str:
    """The language a turn's lines are written in."""
    return ActivityFeed.objects.values_list("language", flat=True).get(pk=feed_id)


def feed_ids_of_conversations(conversation_ids: Iterable[Any]) -> list[int]:
    return list(
        ActivityFeed.objects.filter(conversation_id__in=list(conversation_ids)).values_list(
            "pk", flat=True
        )
    )


def calls_without_result(feed_id: int) -> list[tuple[str, str]]:
    """The (tool, call_id) of each call written with no result after it, in seq order: the
    calls that were on their way when a turn's process died."""
    events = ActivityEvent.objects.filter(feed_id=feed_id)
    results = events.filter(kind=ActivityEvent.Kind.TOOL_RESULT).values("call_id")
    calls = events.filter(kind=ActivityEvent.Kind.TOOL_CALL).exclude(call_id__in=results)
    return list(calls.order_by("seq").values_list("tool", "call_id"))


def running_and_recent(owner_id: int, since: datetime) -> tuple[int, int]:
    """The user's running turns and the turns they began since `since` (their feeds still
    shown to them)."""
    row = _RUNNING_AND_RECENT.fetchone(owner=owner_id, since=since)
    return row if row is not None else (0, 0)  # a user deleted meanwhile has no turns


def _running_and_recent_query() -> QuerySet[Any]:
    """Both counts in one statement compiled once, each read through its own index: every
    question runs it, and the ORM took longer to build two counts than SQLite to run them."""
    user = get_user_model()
    feeds = ActivityFeed.objects.filter(owner_id=OuterRef("pk"), hidden_from_owner=False)

    def count(feeds: QuerySet[ActivityFeed]) -> Subquery:
        # COUNT without GROUP BY: one row, 0 when no feed matches.
        number = Func(F("pk"), function="COUNT", output_field=IntegerField())
        return Subquery(feeds.order_by().values(n=number))

    since = Param("since", ActivityFeed._meta.get_field("started_at"))
    return user.objects.filter(pk=Param("owner", user._meta.pk)).values_list(
        count(feeds.filter(state=ActivityFeed.State.RUNNING)),
        count(feeds.filter(started_at__gte=since)),
    )


_RUNNING_AND_RECENT = Compiled(_running_and_recent_query)


def tokens_since(owner_id: int, since: datetime) -> int:
    """Tokens the user's turns used since `since`; a turn with unknown usage counts 0."""
    feeds = ActivityFeed.objects.filter(owner_id=owner_id, started_at__gte=since)
    return feeds.aggregate(used=Sum("total_tokens"))["used"] or 0


def called_tools(feed_id: int) -> dict[str, str]:
    """The tool of each call a feed recorded, by call id: what a score may judge."""
    calls = ActivityEvent.objects.filter(feed_id=feed_id, kind=ActivityEvent.Kind.TOOL_CALL)
    return dict(calls.values_list("call_id", "tool"))


def current_ratings(events: Iterable[RecordedEvent], *, by_id: int | None) -> dict[str, Score]:
    """The rating one person gives each target of a feed ("" the answer, else a call id):
    their latest score with a rating. The record keeps the earlier ones."""
    ratings: dict[str, Score] = {}
    for event in events:
        if isinstance(event, Score) and event.value and event.by_id == by_id:
            ratings[event.call_id] = event
    return ratings


def scored_feed_ids(
    *, after: int, limit: int, since: datetime | None = None, until: datetime | None = None
) -> list[int]:
    """The next `limit` feeds after feed `after`, by id, that hold a score written in the
    period: the keyset the dataset export walks, a chunk at a time."""
    scores = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.SCORE, feed_id__gt=after)
    if since is not None:
        scores = scores.filter(created_at__gte=since)
    if until is not None:
        scores = scores.filter(created_at__lt=until)
    ids = scores.values_list("feed_id", flat=True).distinct().order_by("feed_id")
    return list(ids[:limit])
