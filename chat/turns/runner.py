"""Runs the agent for one answer: records its feed, saves its text, proves it alive, and
broadcasts every event to the conversation's followers. It outlives the socket or request
that began it (chat.turns.begin)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from openai import AsyncOpenAI

from activity.commits import Ride
from activity.events import (
    Decision,
    Done,
    ModelCallDone,
    RecordedEvent,
    Status,
    TextDelta,
    ToolCall,
    to_json,
    turn_state,
)
from activity.models import ActivityFeed
from activity.preferences import FeedPrefs
from activity.presentation import summarize
from activity.recorder import FeedRecorder
from activity.usage import configured_prices
from activity.writes import update_row
from chat.agent.approval import Paused, Verdict
from chat.agent.builtin_tools import default_registry
from chat.agent.client import make_client
from chat.agent.errors import describe_failure
from chat.agent.loop import run_agent
from chat.agent.mcp import connected_tools
from chat.agent.tools import ToolRegistry
from chat.agent.traceparent import trace_turn
from chat.models import Conversation, Message, ToolApproval
from chat.servers.configured import configured_servers
from chat.servers.heartbeat import after_first_look
from chat.turns import registry
from chat.turns.broadcast import send_turn_event
from chat.turns.history import amodel_history

logger = logging.getLogger("glassbox.turns")


async def heartbeat(recorder: FeedRecorder, turn: asyncio.Task) -> None:
    """Proves the turn alive, with the group commit that writes what it did meanwhile, and
    picks up a Stop from another process."""
    interval = settings.GLASSBOX_HEARTBEAT_SECONDS
    beat = functools.partial(_beat, recorder.feed.pk)
    while True:
        await asyncio.sleep(interval)
        try:
            stop = await recorder.write(beat, at_once=False)
        except Exception:
            # A beat that stopped here would let the turn be taken for dead while it runs.
            logger.warning(
                "turn of feed %s could not write its beat", recorder.feed.pk, exc_info=True
            )
            continue
        if stop:
            turn.cancel()
            return


def _beat(feed_id: int) -> bool:
    """In a commit's transaction; True when a Stop was asked for (the feed is then not
    marked alive: it is about to end)."""
    alive = update_row(
        ActivityFeed, feed_id, {"heartbeat_at": timezone.now()}, stop_requested=False
    )
    return not alive


class AnswerText:
    """The answer as it streams: coalesced into frames for sockets, and written with the
    group commit (at most every GLASSBOX_COMMIT_SECONDS), never once per token."""

    def __init__(self, answer: Message, group: str, recorder: FeedRecorder) -> None:
        self.answer = answer
        self.group = group
        self.recorder = recorder
        self.text = ""
        self.sent = 0
        self.stored = 0
        self.flush_task: asyncio.Task | None = None
        self.last_frame = 0.0

    async def add(self, content: str) -> None:
        self.text += content
        window = settings.GLASSBOX_TEXT_FRAME_SECONDS
        wait = self.last_frame + window - asyncio.get_running_loop().time()
        if wait <= 0:
            await self.send()
        elif self.flush_task is None:
            self.flush_task = asyncio.create_task(self._send_later(wait))
        if len(self.text) - self.stored >= settings.GLASSBOX_TEXT_FLUSH_CHARS:
            await self.recorder.write()

    def ride(self) -> Ride | None:
        """The text not yet on disk, for the next group commit."""
        if self.stored >= len(self.text):
            return None
        text = self.text

        def written() -> None:
            self.stored = max(self.stored, len(text))

        return Ride(Message, self.answer.pk, {"content": text}, written)

    async def _send_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self.flush_task = None
        await self.send()

    async def send(self) -> None:
        """Sends what is pending; called before any other event so order is kept."""
        if self.flush_task is not None:
            self.flush_task.cancel()
            self.flush_task = None
        if self.sent == len(self.text):
            return
        offset, self.sent = self.sent, len(self.text)
        self.last_frame = asyncio.get_running_loop().time()
        await send_turn_event(
            self.group,
            answer_id=self.answer.pk,
            event=to_json(TextDelta(self.text[offset:])),
            offset=offset,
        )


async def run(
    *,
    answer: Message,
    history: list[dict[str, Any]] | None = None,
    tools: ToolRegistry | None = None,
    client_factory: Callable[[], AsyncOpenAI] = make_client,
    resume: Paused | None = None,
    verdict: Verdict | None = None,
    decided: Decision | None = None,
) -> Message.State:
    """Runs a turn to its end, or to a tool call that must be approved first (the turn is
    then `waiting` and no task holds it). `resume` goes on from such a pause, with the
    decision in `verdict`, in whichever process received it. `history` is what the model is
    told, if it was read with the turn's admission (else it is read here)."""
    # Every line and the summary are written in the asker's language; the override holds
    # for this task only, whatever the sockets watching it speak.
    with translation.override(answer.answer_feed.language):
        return await _turn_run(answer, history, tools, client_factory, resume, verdict, decided)


async def _turn_run(
    answer: Message,
    history: list[dict[str, Any]] | None,
    tools: ToolRegistry | None,
    client_factory: Callable[[], AsyncOpenAI],
    resume: Paused | None,
    verdict: Verdict | None,
    decided: Decision | None,
) -> Message.State:
    group = Conversation.group_name_for(answer.conversation_id)
    recorder = FeedRecorder(answer.answer_feed, configured_prices())
    # Its MCP requests carry one trace id, resumed or not (chat.agent.traceparent).
    trace_turn(str(recorder.feed.pk))
    text = AnswerText(answer, group, recorder)
    if resume is not None:
        await recorder.load()
        text.text = answer.content
        text.stored = text.sent = len(answer.content)
    registry.text_started(answer.pk, text, recorder)
    paused: Paused | None = None

    async def emit(event: RecordedEvent) -> None:
        await text.send()
        if isinstance(event, Status) and event.live_only:
            # A tool's progress: shown live, its last report kept on the call's result.
            await send_turn_event(group, answer_id=answer.pk, event=to_json(event))
            return
        recorded = await recorder.number(event)
        if isinstance(event, ToolCall):
            # Write-ahead: the call and its arguments are on disk before the loop is asked
            # for its next item, which starts the tool.
            await recorder.write()
        # People see a line at once; it is written with the next group commit. Until then
        # the lines before it travel with it, so a follower that missed one has it anyway.
        await send_turn_event(
            group,
            answer_id=answer.pk,
            event=to_json(recorded),
            unsaved=[to_json(e) for e in recorder.unsaved(before=recorded.seq or 0)],
        )

    state = Message.State.COMPLETE
    if decided is not None:
        # Recorded and numbered with its claim (chat.turns.approvals): only shown here.
        await send_turn_event(group, answer_id=answer.pk, event=to_json(decided))
    this = asyncio.current_task()
    assert this is not None  # a turn runs as a task of its own (registry.launch)
    recorder.join(text)
    beating = asyncio.create_task(heartbeat(recorder, this))
    try:
        async with asyncio.timeout(settings.GLASSBOX_TURN_TIMEOUT):
            tools = tools or await turn_tools()
            # A turn lives outside the request cycle that closes expired or broken database
            # connections: its trips to the database thread (database_sync_to_async) do.
            if resume is not None:
                history = []
            elif history is None:
                history = await amodel_history(answer)
            # The client is shared by the turns of this process (see make_client).
            async for event in run_agent(
                client=client_factory(),
                model=settings.GLASSBOX_MODEL,
                messages=history,
                language=recorder.feed.language,
                registry=tools,
                max_tool_rounds=settings.GLASSBOX_MAX_TOOL_ROUNDS,
                tool_timeout=settings.GLASSBOX_TOOL_TIMEOUT,
                resume=resume,
                verdict=verdict,
            ):
                if isinstance(event, TextDelta):
                    await text.add(event.content)
                elif isinstance(event, ModelCallDone):
                    recorder.add_call(event)
                elif isinstance(event, Paused):
                    paused = event
                    await _pause(answer, recorder, text, paused)
                else:
                    await emit(event)
    except asyncio.CancelledError:
        beating.cancel()
        state = Message.State.INTERRUPTED
        await emit(Status(icon="⏹", message=_("Stopped"), state="failed"))
        await _finish(answer, recorder, text, tools, state)
        raise
    except Exception as exc:
        logger.warning("turn %s failed: %r", answer.pk, exc, exc_info=True)
        state = Message.State.FAILED
        reason = describe_failure(exc)
        await emit(Status(icon="❌", message=reason[0].upper() + reason[1:], state="failed"))
    finally:
        beating.cancel()
    if paused is not None and state == Message.State.COMPLETE:
        registry.text_finished(answer.pk, text)
        return Message.State.WAITING
    await _finish(answer, recorder, text, tools, state)
    return state


async def _pause(
    answer: Message, recorder: FeedRecorder, text: AnswerText, paused: Paused
) -> None:
    """Writes what the loop needs to go on, with the ⏸ line and every pending event, in one
    transaction, and only then shows the line: whoever sees it can decide, in any process,
    even if this one dies now. The task then ends: a pause may last minutes."""
    await text.send()
    assert paused.waiting is not None
    line = await recorder.number(paused.waiting)
    call = paused.call
    arguments = next(
        (
            e.arguments
            for e in recorder.events
            if isinstance(e, ToolCall) and e.call_id == call["call_id"]
        ),
        {},
    )
    content, count, head = text.text, len(recorder.events), recorder.head

    def store() -> None:
        ToolApproval.objects.create(
            answer=answer,
            call_id=call["call_id"],
            tool=call["name"],
            arguments=arguments,
            state=paused.as_state(),
            deadline=timezone.now() + timedelta(seconds=settings.GLASSBOX_APPROVAL_TIMEOUT),
        )
        Message.objects.filter(pk=answer.pk).update(content=content, state=Message.State.WAITING)
        ActivityFeed.objects.filter(pk=answer.answer_feed.pk).update(
            state=ActivityFeed.State.WAITING, event_count=count, chain_head=head
        )

    recorder.leave()  # the text is written with the pause
    await recorder.write(store)
    text.stored = len(content)
    await send_turn_event(text.group, answer_id=answer.pk, event=to_json(line))


async def close_paused(answer: Message) -> None:
    """A waiting turn that was stopped: it ends as stopped, with what it had."""
    recorder = FeedRecorder(answer.answer_feed, configured_prices())
    await recorder.load()
    text = AnswerText(answer, Conversation.group_name_for(answer.conversation_id), recorder)
    text.text = answer.content
    text.stored = text.sent = len(answer.content)
    with translation.override(answer.answer_feed.language):
        stopped = await recorder.number(Status(icon="⏹", message=_("Stopped"), state="failed"))
        await send_turn_event(text.group, answer_id=answer.pk, event=to_json(stopped))
        await _finish(answer, recorder, text, None, Message.State.INTERRUPTED)


FIRST_WAIT = 0.05


class ClosedElsewhere(Exception):
    """The turn was closed by another process before its end was written."""


async def _end_written(recorder: FeedRecorder, end: Callable[[], None]) -> None:
    """The end's commit, tried again while the database is unreachable (a restart, a
    failover), for up to GLASSBOX_TURN_TIMEOUT; at most a second between tries, so `done`
    follows the database's return within about a second."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + settings.GLASSBOX_TURN_TIMEOUT
    wait = FIRST_WAIT
    while True:
        try:
            await recorder.write(end)
            return
        except (OperationalError, InterfaceError):
            if loop.time() + wait > give_up:
                raise
            # The first failure with its cause; the tries after it in one line each.
            logger.warning(
                "turn of feed %s could not write its end; trying again in %.2f s",
                recorder.feed.pk,
                wait,
                exc_info=wait == FIRST_WAIT,
            )
        await asyncio.sleep(wait)
        wait = min(wait * 2, 1.0)


async def turn_tools() -> ToolRegistry:
    """The built-in tools and those of the MCP servers that are connected now (or known)."""
    await after_first_look()
    return default_registry().with_tools(await connected_tools(await configured_servers()))


async def _finish(
    answer: Message,
    recorder: FeedRecorder,
    text: AnswerText,
    tools: ToolRegistry | None,
    state: Message.State,
) -> None:
    await text.send()
    labels = (tools or default_registry()).labels()
    shown = FeedPrefs.from_mappings(settings.GLASSBOX_FEED).show_reasoning
    summary = summarize(recorder.events, labels, shown)
    content, feed = text.text, recorder.finished(state, summary, text.text)
    opened = answer.state  # streaming, or waiting for a paused turn that is stopped

    def end() -> None:
        # Only if nobody closed the turn meanwhile (recovery, while the database was away
        # and this process could not prove it alive): rolled back then, its rows with it.
        if not update_row(Message, answer.pk, {"content": content, "state": state}, state=opened):
            raise ClosedElsewhere
        ActivityFeed.close(recorder.feed.pk, feed)

    # Every event, the text and the end in one transaction, before `done` goes out.
    recorder.leave()
    try:
        await _end_written(recorder, end)
    except ClosedElsewhere:
        # Its followers were told by whoever closed it.
        logger.warning("turn %s was closed elsewhere before its end was written", answer.pk)
        registry.text_finished(answer.pk)
        return
    except DatabaseError:
        # Released: its text and events stay in the registry, and whoever recovers the turn
        # in this process writes them (chat.turns.recovery), rather than an empty interruption.
        logger.error("turn %s could not write its end", answer.pk, exc_info=True)
        return
    text.stored = len(content)
    # Only now: a follower that joins in between reads the whole text from here or there.
    registry.text_finished(answer.pk)
    done = Done(
        message_id=str(answer.pk),
        state=turn_state(state),
        summary_icon=summary.icon if summary else "",
        summary_text=summary.text if summary else "",
    )
    await send_turn_event(
        Conversation.group_name_for(answer.conversation_id),
        answer_id=answer.pk,
        event=to_json(done),
        written={"seq": recorder.last_seq, "text": len(content)},
    )
