"""Reads of activity data, scoped by who is asking. Pages, API and export all come here."""

from __future__ import annotations

from django.db.models import QuerySet

from activity.models import ActivityEvent, ActivityFeed


def feeds_visible_to(user) -> QuerySet[ActivityFeed]:
    feeds = ActivityFeed.objects.all()
    if user.is_staff:
        return feeds
    return feeds.filter(owner=user)


def events_of(feed_ids) -> QuerySet[ActivityEvent]:
    return ActivityEvent.objects.filter(feed_id__in=feed_ids).order_by("feed_id", "seq")
