"""Turns whose process died: judged by the runner's heartbeat (or its last recorded event),
never by age alone, and closed as `interrupted` with their text and events kept."""

from __future__ import annotations

import logging
from datetime import timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError, transaction
from django.db.models import Max
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from activity.events import Done, Status, to_json, with_seq
from activity.models import ActivityEvent, ActivityFeed
from chat.broadcast import send_turn_event
from chat.models import Conversation, Message

logger = logging.getLogger("glassbox.recovery")


def lost() -> Status:
    return Status(
        icon="⚠️", message=_("Interrupted: the server stopped while working"), state="failed"
    )


GRACE_BEATS = 4


def dead_turns_recover(*, conversation=None) -> int:
    """Closes the streaming turns (of one conversation, or all) that stopped beating."""
    silent_since = timezone.now() - timedelta(
        seconds=settings.GLASSBOX_HEARTBEAT_SECONDS * GRACE_BEATS
    )
    streaming = Message.objects.filter(state=Message.State.STREAMING).select_related("feed")
    if conversation is not None:
        streaming = streaming.filter(conversation=conversation)
    recovered = 0
    for answer in streaming.annotate(last_event=Max("feed__events__created_at")):
        feed = answer.feed
        alive = max(t for t in (feed.started_at, feed.heartbeat_at, answer.last_event) if t)
        if alive >= silent_since:
            continue
        # Its last line and summary speak the language of the turn, not of whoever noticed.
        with translation.override(feed.language):
            if _interrupt(answer, feed):
                recovered += 1
                _tell_clients(answer, last_seq=feed.event_count)
    return recovered


def _tell_clients(answer: Message, last_seq: int) -> None:
    """Open sockets and API streams of the conversation see the turn end."""
    event = ActivityEvent.objects.get(feed_id=answer.feed_id, seq=last_seq).to_event()
    done = Done(str(answer.pk), Message.State.INTERRUPTED, event.icon, event.message)
    group = Conversation.group_name_for(answer.conversation_id)
    try:
        for item in (event, done):
            async_to_sync(send_turn_event)(group, answer_id=answer.pk, event=to_json(item))
    except Exception:
        logger.exception(
            "could not tell the clients of turn %s that it was interrupted", answer.pk
        )


@transaction.atomic
def _interrupt(answer: Message, feed: ActivityFeed) -> bool:
    # Only one process may close a turn: the state check makes the update the lock.
    closed = Message.objects.filter(pk=answer.pk, state=Message.State.STREAMING).update(
        state=Message.State.INTERRUPTED
    )
    if not closed:
        return False
    last = feed.events.aggregate(seq=Max("seq"))["seq"] or 0
    line = lost()
    ActivityEvent.from_event(feed, with_seq(line, last + 1)).save()
    ActivityFeed.objects.filter(pk=feed.pk).update(
        state=ActivityFeed.State.INTERRUPTED,
        finished_at=timezone.now(),
        summary_icon=line.icon,
        summary_text=line.message,
        event_count=last + 1,
    )
    feed.event_count = last + 1
    return True


def recover_at_start() -> None:
    """At process start, close the turns a dead process left. A database that is not there
    yet (before the first migrate) is no reason to fail starting, and an application imported
    inside a running event loop (tests) leaves it to the conversations' own checks."""
    try:
        recovered = dead_turns_recover()
    except (DatabaseError, SynchronousOnlyOperation) as problem:
        logger.warning("could not look for interrupted turns at start: %s", problem)
        return
    if recovered:
        logger.warning("marked %d turn(s) of a stopped process as interrupted", recovered)
