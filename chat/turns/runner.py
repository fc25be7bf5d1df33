"""Runs the agent for one answer: records its feed, saves its text, proves it alive, and
broadcasts every event to the conversation's followers. It outlives the socket or request
that began it (chat.turns.starting)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError
from django.utils import translation
from django.utils.translation import gettext as _

from activity import telemetry
from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.presentation import summarize
from activity.recording.events import (
    Decision,
    Done,
    ModelCallDone,
    RecordedEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolFeedback,
    ToolResult,
    to_json,
    turn_state,
)
from activity.telemetry.ids import trace_id
from activity.usage import configured_prices
from activity.writing import feeds
from activity.writing.commits import Ride
from activity.writing.recorder import FeedRecorder
from chat.agent.approval import Paused, Verdict
from chat.agent.context import Person
from chat.agent.errors import describe_failure
from chat.agent.loop import run_agent
from chat.agent.mcp import release_asker
from chat.agent.questions import ask_with
from chat.agent.tools import ToolRegistry
from chat.agent.traceparent import trace_turn
from chat.asks import approvals
from chat.asks.elicitations import TurnAsker
from chat.conversations.services import answer_end, answer_extend, answer_pause
from chat.models import Conversation, Message
from chat.servers.asking import ConnectAsker
from chat.turns import deps, registry
from chat.turns.broadcast import send_conversations_changed, send_turn_event
from chat.turns.history import amodel_history
from chat.turns.policy import agent_policy
from chat.turns.recovery import lost, settle_given_up
from chat.turns.sampling import sampling_model
from project.outages import while_down

logger = logging.getLogger("glassbox.turns")


def stopped_line() -> Status:
    """The last line of a turn its owner stopped: an end they chose, so done, not failed."""
    return Status(icon="⏹", message=_("Stopped"), state="done")


async def heartbeat(recorder: FeedRecorder, turn: asyncio.Task, answer_id: int) -> None:
    """Proves the turn alive, with the group commit that writes what it did meanwhile, and
    picks up a Stop from another process."""
    interval = settings.GLASSBOX_HEARTBEAT_SECONDS
    beat = functools.partial(_stop_asked, recorder.feed.pk)
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
            registry.stop_asked(answer_id)
            turn.cancel()
            return


def _stop_asked(feed_id: int) -> bool:
    """The beat, in a commit's transaction; True when a Stop was asked for (the feed is then
    not marked alive: it is about to end)."""
    return not feeds.beat(feed_id)


# Up to this many answers streaming in one process, each gets a frame per base window; past
# it the window grows with their number (to its cap), so the process sends about this many
# text frames per base window in all (10 per 30 ms: 330 a second) however many answers
# stream: 1,560 text frames for 100 sessions where 20 sent 2,620 (../shared/peer-bench), the
# text still moving four times a second at the cap.
FRAMES_AT_BASE = 10


def frame_window(base: float, widest: float, streaming: int) -> float:
    """How long one answer's text gathers before it is sent as a frame, while this process
    streams `streaming` answers. Each frame costs the process the same whatever it carries
    (the layer, every socket's viewer, Daphne's framing), and text that moves four times a
    second still reads as streaming: under load the frames grow instead of the process's
    work. Up to FRAMES_AT_BASE answers the product is at most `base`, so `base` it stays."""
    return max(base, min(widest, base * streaming / FRAMES_AT_BASE))


class AnswerText:
    """The answer as it streams: coalesced into frames for sockets (wider ones under load:
    `frame_window`), and written with the group commit (at most every
    GLASSBOX_COMMIT_SECONDS), never once per token."""

    def __init__(self, answer: Message, group: str, recorder: FeedRecorder) -> None:
        self.answer = answer
        self.group = group
        self.recorder = recorder
        self.text = ""
        self.sent = 0
        self.stored = 0
        self.flush_task: asyncio.Task | None = None
        self.last_frame = 0.0
        # Read once: `add` runs for every token, and each settings read goes through a proxy.
        self.window = settings.GLASSBOX_TEXT_FRAME_SECONDS
        self.widest = settings.GLASSBOX_TEXT_FRAME_MAX_SECONDS
        self.flush_chars = settings.GLASSBOX_TEXT_FLUSH_CHARS

    async def add(self, content: str) -> None:
        self.text += content
        self.recorder.touch()
        window = frame_window(self.window, self.widest, registry.texts_streaming())
        wait = self.last_frame + window - asyncio.get_running_loop().time()
        if wait <= 0:
            await self.send()
        elif self.flush_task is None:
            self.flush_task = asyncio.create_task(self._send_later(wait))
        if len(self.text) - self.stored >= self.flush_chars:
            await self.recorder.write()

    def ride(self) -> Ride | None:
        """The text not yet on disk, for the next group commit."""
        if self.stored >= len(self.text):
            return None
        text = self.text

        def written() -> None:
            self.stored = max(self.stored, len(text))

        return answer_extend(answer_id=self.answer.pk, text=text, written=written)

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
    resume: Paused | None = None,
    verdict: Verdict | None = None,
    decided: Decision | None = None,
    asker: Person | None = None,
) -> Message.State:
    """Runs a turn to its end, or to a tool call that must be approved first (the turn is
    then `waiting` and no task holds it). `resume` goes on from such a pause, with the
    decision in `verdict`, in whichever process received it. `history` is what the model is
    told, if it was read with the turn's admission (else it is read here), and `asker` its
    owner, as its tools are told (else read here). Its client, tools and the services its
    tools reach are those of chat.turns.deps."""
    if asker is None:
        asker = await database_sync_to_async(deps.person_by_id)(answer.answer_feed.owner_id)
    # Every line and the summary are written in the asker's language; the override holds
    # for this task only, whatever the sockets watching it speak.
    with translation.override(answer.answer_feed.language):
        return await _turn_run(answer, history, deps.current(), asker, resume, verdict, decided)


async def _turn_run(
    answer: Message,
    history: list[dict[str, Any]] | None,
    dependencies: deps.Dependencies,
    asker: Person,
    resume: Paused | None,
    verdict: Verdict | None,
    decided: Decision | None,
) -> Message.State:
    group = Conversation.group_name_for(answer.conversation_id)
    recorder = FeedRecorder(answer.answer_feed, configured_prices())
    # Its MCP requests name its exported trace, resumed or not (chat.agent.traceparent).
    trace_turn(trace_id(recorder.feed.pk, recorder.feed.started_at))
    text = AnswerText(answer, group, recorder)
    if resume is not None:
        await recorder.load()
        text.text = answer.content
        text.stored = text.sent = len(answer.content)
    registry.text_started(answer.pk, text, recorder)
    paused: Paused | None = None
    tools: ToolRegistry | None = None

    async def emit(event: RecordedEvent) -> None:
        await text.send()
        if isinstance(event, Status) and event.live_only:
            # A tool's progress: shown live, its last report kept on the call's result.
            registry.progress_shown(answer.pk, event)
            await send_turn_event(group, answer_id=answer.pk, event=to_json(event))
            return
        if isinstance(event, ToolResult):
            registry.progress_ended(answer.pk, event.call_id)
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

    # An MCP server's question during a call is shown and answered as this turn's.
    ask_with(TurnAsker(answer, emit, sampling_model(recorder, dependencies.client_factory, emit)))
    state = Message.State.COMPLETE
    if decided is not None:
        # Recorded and numbered with its claim (chat.asks.approvals): only shown here.
        await send_turn_event(group, answer_id=answer.pk, event=to_json(decided))
    this = asyncio.current_task()
    assert this is not None  # a turn runs as a task of its own (registry.launch)
    recorder.join(text)
    beating = asyncio.create_task(heartbeat(recorder, this, answer.pk))
    connecting = ConnectAsker(recorder.feed.owner_id, emit)
    context = dependencies.tool_context(
        user=asker, conversation_id=answer.conversation_id, language=recorder.feed.language
    )
    try:
        async with asyncio.timeout(settings.GLASSBOX_TURN_TIMEOUT):
            tools = await dependencies.tools(connecting)
            # A turn lives outside the request cycle that closes expired or broken database
            # connections: its trips to the database thread (database_sync_to_async) do.
            if resume is not None:
                history = []
            elif history is None:
                history = await amodel_history(answer)
            await deps.sdk_imported()
            async for event in run_agent(
                client=dependencies.client_factory(),
                messages=history,
                language=recorder.feed.language,
                registry=tools,
                policy=agent_policy(),
                context=context,
                resume=resume,
                verdict=verdict,
            ):
                if isinstance(event, TextDelta):
                    await text.add(event.content)
                elif isinstance(event, ModelCallDone):
                    recorder.add_call(event)
                elif isinstance(event, ToolFeedback):
                    # The seed's event for programs: live only, the status line keeps it.
                    await send_turn_event(group, answer_id=answer.pk, event=to_json(event))
                elif isinstance(event, Paused):
                    paused = event
                    await _pause(answer, recorder, text, paused)
                else:
                    await emit(event)
    except asyncio.CancelledError:
        beating.cancel()
        # Only its owner's Stop is `stopped`; any other cancellation (its event loop shutting
        # down under it) is not theirs, and ends it as a dead process's turn would end.
        if registry.stopped_by_owner(answer.pk):
            state = Message.State.STOPPED
            await emit(stopped_line())
        else:
            state = Message.State.INTERRUPTED
            await emit(lost())
        await _finish(answer, recorder, text, tools, state)
        raise
    except Exception as exc:
        logger.warning("turn %s failed: %r", answer.pk, exc, exc_info=True)
        state = Message.State.FAILED
        reason = describe_failure(exc)
        await emit(Status(icon="❌", message=reason[0].upper() + reason[1:], state="failed"))
    finally:
        beating.cancel()
        connecting.close()
        release_asker(connecting)
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
        approvals.open_wait(
            answer=answer,
            paused=paused,
            arguments=arguments,
            deadline_seconds=settings.GLASSBOX_APPROVAL_TIMEOUT,
        )
        answer_pause(answer_id=answer.pk, content=content)
        feeds.pause(answer.answer_feed.pk, event_count=count, head=head)

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
        stopped = await recorder.number(stopped_line())
        await send_turn_event(text.group, answer_id=answer.pk, event=to_json(stopped))
        await _finish(answer, recorder, text, None, Message.State.STOPPED)


FIRST_WAIT = 0.05


class ClosedElsewhere(Exception):
    """The turn was closed by another process before its end was written."""


async def _end_written(recorder: FeedRecorder, end: Callable[[], None]) -> None:
    """The end's commit, tried again while the database is unreachable (a restart, a
    failover), for up to GLASSBOX_TURN_TIMEOUT; at most a second between tries, so `done`
    follows the database's return within about a second."""

    def failed(wait: float, first: bool) -> None:
        # The first failure with its cause; the tries after it in one line each.
        logger.warning(
            "turn of feed %s could not write its end; trying again in %.2f s",
            recorder.feed.pk,
            wait,
            exc_info=first,
        )

    await while_down(
        lambda: recorder.write(end),
        first=FIRST_WAIT,
        most=1.0,
        for_seconds=settings.GLASSBOX_TURN_TIMEOUT,
        failed=failed,
    )


async def _finish(
    answer: Message,
    recorder: FeedRecorder,
    text: AnswerText,
    tools: ToolRegistry | None,
    state: Message.State,
) -> None:
    await text.send()
    labels = (tools or deps.builtin_tools()).labels()
    shown = FeedPrefs.from_mappings(settings.GLASSBOX_FEED).show_reasoning
    summary = summarize(recorder.events, labels, shown, stopped=state == Message.State.STOPPED)
    content, feed = text.text, recorder.finished(state, summary, text.text)
    opened = answer.state  # streaming, or waiting for a paused turn that is stopped

    def end() -> None:
        # Only if nobody closed the turn meanwhile (recovery, while the database was away
        # and this process could not prove it alive): rolled back then, its rows with it.
        if not answer_end(answer_id=answer.pk, content=content, state=state, opened=opened):
            raise ClosedElsewhere
        feeds.finish(recorder.feed.pk, feed)

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
        settle_given_up(answer.pk, answer.conversation_id)
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
    await send_conversations_changed(await _owner_of(answer), answer.conversation_id)
    if telemetry.enabled():
        await _trace_sent(recorder.feed.pk)


async def _owner_of(answer: Message) -> int:
    """Read from the conversation admission loaded with the answer; a turn resumed from
    storage reads it."""
    if Message.conversation.is_cached(answer):
        return answer.conversation.owner_id
    owner = (
        await Conversation.objects.filter(pk=answer.conversation_id)
        .values_list("owner_id", flat=True)
        .afirst()
    )
    return owner or 0


async def _trace_sent(feed_id: int) -> None:
    """The turn's trace, read back from what was just written; a backend that is away costs
    the trace, never the turn (the SDK's batch thread does the sending)."""
    try:
        await database_sync_to_async(telemetry.turn_ended)(feed_id)
    except Exception:
        logger.warning("the trace of feed %s could not be sent", feed_id, exc_info=True)
