"""Turns whose process died, closed as `interrupted` with their text and events kept.

The policy, stated once:
- a running turn beats every GLASSBOX_HEARTBEAT_SECONDS (chat.turns.runner); its events and
  text are written every GLASSBOX_COMMIT_SECONDS (activity.writing.commits), a tool call
  before it runs;
- a follower that hears nothing of a turn for QUIET_BEATS beats reads its end from the
  database (its `done` may have been dropped) and, when no runner of this process holds it,
  looks for a dead runner here;
- a turn is dead when it has been silent (no beat, no event, no start) for GRACE_BEATS beats:
  judged by the heartbeat, never by age alone, and counted at the latest from when the
  database was last away, since no runner can beat meanwhile: its own start on PostgreSQL (a
  restart, whoever judges) and the last time this process found it unreachable (a failover
  or a network cut too, project.outages);
- the check runs when a conversation is opened (page, socket or API), when a new turn is
  blocked by a running one or by the user's limit of running turns, when a follower goes
  quiet, and, for a turn whose runner here gave up writing its end, every QUIET_BEATS beats
  until it is closed (by this process, with what it held, or by another); never at import
  time.
Only one process closes a turn (the state check in the UPDATE), and every follower is told."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from datetime import timedelta
from typing import Any, Protocol

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.db.models import DateTimeField, Func, Max
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from activity.recording.events import Done, Status, to_json, with_seq
from activity.selectors import calls_without_result
from activity.writing import feeds
from chat.conversations.services import answer_interrupt
from chat.models import Conversation, Message
from chat.turns import registry
from chat.turns.broadcast import send_turn_event
from project.outages import DATABASE_DOWN, seen_down

logger = logging.getLogger("glassbox.recovery")


class ReservedFeed(Protocol):
    """What recovery reads of a turn's feed row (its answer's `feed`)."""

    pk: Any
    seq_reserved: int


def lost() -> Status:
    return Status(
        icon="⚠️", message=_("Interrupted: the server stopped while working"), state="failed"
    )


def unknown_outcome(tool: str, call_id: str) -> Status:
    """A call on disk (written before its tool ran) with no result: it may have done its
    work, or part of it, or none."""
    return Status(
        icon="❔",
        message=_("Outcome unknown: the server stopped while %(tool)s ran") % {"tool": tool},
        state="failed",
        tool=tool,
        call_id=call_id,
    )


QUIET_BEATS = 2
GRACE_BEATS = 4


def quiet_seconds() -> float:
    return settings.GLASSBOX_HEARTBEAT_SECONDS * QUIET_BEATS


def dead_turns_recover(
    *, conversation_id: uuid.UUID | None = None, owner_id: int | None = None
) -> int:
    """Closes the streaming turns (of one conversation, one user's, or all) that stopped
    beating."""
    silent_since = timezone.now() - timedelta(
        seconds=settings.GLASSBOX_HEARTBEAT_SECONDS * GRACE_BEATS
    )
    streaming = Message.objects.filter(state=Message.State.STREAMING).select_related("feed")
    if conversation_id is not None:
        streaming = streaming.filter(conversation_id=conversation_id)
    if owner_id is not None:
        streaming = streaming.filter(conversation__owner_id=owner_id)
    rows = streaming.annotate(last_event=Max("feed__events__created_at"))
    if connection.vendor == "postgresql":
        rows = rows.annotate(database_started=DatabaseStarted())
    recovered = 0
    for answer in rows:
        feed = answer.answer_feed
        alive = max(t for t in (feed.started_at, feed.heartbeat_at, answer.last_event) if t)
        if alive >= silent_since:
            continue
        # A runner that outlived the database's absence is writing its end, and could not
        # beat meanwhile; one of this process that gave up is over whatever the database did.
        away = [t for t in (getattr(answer, "database_started", None), seen_down()) if t]
        if away and max(away) > silent_since and not registry.given_up(answer.pk):
            continue
        # Its last line and summary speak the language of the turn, not of whoever noticed.
        with translation.override(feed.language):
            seq = _interrupt(answer, feed)
            if seq is not None:
                recovered += 1
                _tell_clients(answer, last_seq=seq)
    return recovered


# Each settling task and its turn: held so that the loop does not collect the tasks while
# they wait (asyncio keeps weak references), and for tests to wait for or stop them.
_settling: dict[asyncio.Task[None], int] = {}


def settle_given_up(answer_id: int, conversation_id: uuid.UUID) -> None:
    """For a runner of this process that gave up writing its turn's end (the database was
    away for longer than it waited): once the database answers and the turn's grace is over,
    the turn is closed here with what this process held, or, if another process closed it
    first, what it held is let go. Nothing else may be there to ask: the turn's conversation
    may have no follower here, and another process may have recovered it."""
    if not registry.holds(answer_id):
        return
    # In a context of its own, not the caller's (a request's, say), as it outlives it.
    task = asyncio.get_running_loop().create_task(
        _settled(answer_id, conversation_id), context=contextvars.Context()
    )
    _settling[task] = answer_id
    task.add_done_callback(_forget)


def _forget(task: asyncio.Task[None]) -> None:
    _settling.pop(task, None)


def _of_this_loop() -> list[asyncio.Task[None]]:
    loop = asyncio.get_running_loop()
    return [task for task in _settling if task.get_loop() is loop]


async def all_settled() -> None:
    """Waits until every settling task of this loop has ended (tests)."""
    while tasks := _of_this_loop():
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0)  # the done callbacks that forget them


async def stop_settling() -> None:
    """Stops this loop's settling tasks and lets go of what their turns held (the end of a
    test, whose database goes with it)."""
    for task in (tasks := _of_this_loop()):
        task.cancel()
        registry.released(_settling[task])
    await asyncio.gather(*tasks, return_exceptions=True)


async def _settled(answer_id: int, conversation_id: uuid.UUID) -> None:
    while registry.holds(answer_id):
        await asyncio.sleep(quiet_seconds())
        try:
            await database_sync_to_async(_settle)(answer_id, conversation_id)
        except DATABASE_DOWN:
            logger.debug("turn %s is still held here: the database is away", answer_id)
        except Exception:
            # Not the database's absence: trying again every beat would fail the same way.
            logger.exception("could not close turn %s, held here: letting go of it", answer_id)
            registry.released(answer_id)
            return


def _settle(answer_id: int, conversation_id: uuid.UUID) -> None:
    if Message.objects.filter(pk=answer_id, state=Message.State.STREAMING).exists():
        dead_turns_recover(conversation_id=conversation_id)
    else:
        # Closed elsewhere (or a paused turn, which recovery leaves waiting): nobody will
        # write what was held here.
        registry.released(answer_id)


class DatabaseStarted(Func):
    """When PostgreSQL last started, read with the rows it judges."""

    function = "pg_postmaster_start_time"
    template = "%(function)s()"
    output_field = DateTimeField()


def _tell_clients(answer: Message, last_seq: int) -> None:
    """Open sockets and API streams of the conversation see the turn end (with the ⚠️ line
    _interrupt wrote, or showed only, when it could not seal it)."""
    line = lost()
    done = Done(str(answer.pk), "interrupted", line.icon, line.message)
    group = Conversation.group_name_for(answer.conversation_id)
    try:
        for item in (with_seq(line, last_seq), done):
            async_to_sync(send_turn_event)(group, answer_id=answer.pk, event=to_json(item))
    except Exception:
        logger.exception(
            "could not tell the clients of turn %s that it was interrupted", answer.pk
        )


def _held_text(answer: Message, feed_id: int) -> str | None:
    """A turn of this process that could not write its end (the database was away for
    longer than it waited) left its events, model calls and text here: its events and calls
    are written now and its text handed to the answer's close, so the turn is closed with
    what it had, not as an empty interruption."""
    held = registry.given_up_with(answer.pk)
    if held is None:
        return None
    feeds.keep_held(feed_id, held.events, held.calls)
    # Let go of once stored: a rollback (the database away again) leaves it for the next try.
    transaction.on_commit(lambda: registry.released(answer.pk))
    return held.text


@transaction.atomic
def _interrupt(answer: Message, feed: ReservedFeed) -> int | None:
    """Closes the turn with a ❔ line for each call that had no result and the ⚠️ line; its
    last seq, or None if another process closed it. A feed whose record fails its check (its
    last events removed, say) is closed without a line and without a seal (activity.writing.feeds
    .interrupt)."""
    content = answer_interrupt(answer_id=answer.pk, held=lambda: _held_text(answer, feed.pk))
    if content is None:
        return None
    lines = [*_unknown_outcomes(feed.pk), lost()]
    ended = {
        "state": "interrupted",
        "finished_at": timezone.now(),
        "summary_icon": lines[-1].icon,
        "summary_text": lines[-1].message,
    }
    # Above any seq the dead process may have shown without writing it (its reservation, read
    # with the turn in this pass): a follower that saw that line would take this one for it.
    ended_as = feeds.interrupt(
        feed.pk, lines, above=feed.seq_reserved, fields=ended, answer_text=content
    )
    if not ended_as.sealed:
        logger.error(
            "feed %s of turn %s fails its chain check: closed as interrupted without sealing "
            "after it; manage.py verify_audit names the break",
            feed.pk,
            answer.pk,
        )
    return ended_as.last_seq


def _unknown_outcomes(feed_id: int) -> list[Status]:
    """A line for each call that was on its way when the process died."""
    return [unknown_outcome(tool, call_id) for tool, call_id in calls_without_result(feed_id)]
