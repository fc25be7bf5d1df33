"""The seed's `tool_feedback` event: programs hear the model's feedback_to_user the moment it
is complete, over the socket and over SSE, beside the status line that shows it."""

from __future__ import annotations

import contextlib
import json

import pytest

from chat.turns.registry import finish_all
from tests.support.api import ask, client_for, sse_events
from tests.support.fakes import text_response, tool_call_response
from tests.support.provider_server import Provider, scripted_provider
from tests.support.sockets import json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def feedback_and_its_line(events: list[dict]) -> list[dict]:
    """Each tool_feedback with the event just before it."""
    return [
        pair
        for index, event in enumerate(events)
        if event["type"] == "tool_feedback"
        for pair in (events[index - 1], event)
    ]


async def test_the_models_feedback_arrives_as_tool_feedback_after_its_status_on_both_transports(
    alice, alice_conversation, knowledge_base, gate
):
    socket = await open_socket(alice_conversation, alice, as_json=True)
    held = gate(after=0)
    over_sse = await sse_events(await ask(await client_for(alice), alice_conversation), held=held)
    over_socket = await json_until_done(socket)
    await finish_all()
    await socket.disconnect()

    for events in (over_sse, over_socket):
        line, feedback = feedback_and_its_line(events)
        assert line["type"] == "status"  # existing clients keep their status line
        assert feedback == {
            "type": "tool_feedback",
            "call_id": line["call_id"],
            "feedback": line["message"],
        }
        assert "salary" in feedback["feedback"].lower()
        assert [e["type"] for e in events].count("tool_feedback") == 1


def quiet_call(feedback: str) -> list[list[dict]]:
    arguments = json.dumps({"feedback_to_user": feedback})
    return [
        tool_call_response(("call_q", "current_datetime", arguments), size=4),
        text_response("It is late."),
    ]


@pytest.fixture
def provider(settings):
    """The configured provider is a scripted one; its first answer waits to be let go."""
    with contextlib.ExitStack() as stack:

        def serve(feedback: str) -> Provider:
            running = stack.enter_context(scripted_provider(quiet_call(feedback), held=True))
            settings.OPENAI_API_KEY = "sk-test"
            settings.OPENAI_BASE_URL = running.url
            settings.GLASSBOX_MODEL = "scripted"
            return running

        yield serve


async def test_an_empty_feedback_is_sent_as_an_empty_tool_feedback_over_sse(
    alice, alice_conversation, provider
):
    held = provider("  ")
    events = await sse_events(await ask(await client_for(alice), alice_conversation), held=held)
    await finish_all()

    assert {"type": "tool_feedback", "call_id": "call_q", "feedback": ""} in events
    lines = [e["message"] for e in events if e["type"] == "status" and e.get("call_id")]
    assert "" not in lines  # the tool's own line stays: an empty feedback shows nothing
    assert events[-1]["type"] == "done"


async def test_an_empty_feedback_is_sent_as_an_empty_tool_feedback_over_the_socket(
    alice, alice_conversation, provider
):
    provider("").open()
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": "What time is it?"}))
    events = await json_until_done(socket)
    await finish_all()
    await socket.disconnect()

    feedback = [e for e in events if e["type"] == "tool_feedback"]
    assert feedback == [{"type": "tool_feedback", "call_id": "call_q", "feedback": ""}]


async def test_a_long_feedback_is_cut_to_a_hundred_characters_and_dots(
    alice, alice_conversation, provider
):
    provider("x" * 150).open()
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": "What time is it?"}))
    events = await json_until_done(socket)
    await finish_all()
    await socket.disconnect()

    (feedback,) = [e["feedback"] for e in events if e["type"] == "tool_feedback"]
    assert feedback == "x" * 100 + "..."


async def test_a_late_follower_gets_each_recorded_calls_feedback_where_it_was_sent_live():
    from activity.recording.events import RecordedEvent, Status, ToolCall, to_json
    from chat.turns.feedback import with_feedback

    def status(call_id: str, message: str) -> Status:
        return Status("🔍", message, "in_progress", "t", call_id, seq=0)

    def call(call_id: str, feedback: str) -> ToolCall:
        return ToolCall("t", call_id, {"feedback_to_user": feedback, "query": "q"}, seq=0)

    recorded: list[RecordedEvent] = [
        status("a", "Searching…"), status("b", "Searching…"), status("a", "Looking up pay"),
        call("a", " Looking   up pay "), call("b", ""), status("c", "Searching…"),
    ]  # fmt: skip

    sent = [to_json(e) for e in with_feedback(recorded)]
    assert [(e["type"], e.get("call_id"), e.get("feedback")) for e in sent] == [
        ("status", "a", None), ("status", "b", None), ("status", "a", None),
        ("tool_feedback", "a", "Looking up pay"), ("tool_call", "a", None),
        ("tool_feedback", "b", ""), ("tool_call", "b", None),
        ("status", "c", None),  # its call is not recorded yet: its feedback comes live
    ]  # fmt: skip


class Inbox:
    """The conversation group's messages to one follower, as they were sent."""

    def __init__(self, *messages: dict) -> None:
        self.messages = list(messages)

    async def get(self) -> dict:
        return self.messages.pop(0)


async def test_a_follower_that_joined_after_the_feedback_went_out_gets_it_with_its_call(
    alice_conversation,
):
    """It joined after the live tool_feedback and before its call was recorded: the
    snapshot had the call's feedback line, not the call; the feedback comes with the call."""
    from activity.recording.events import ToolFeedback, from_json, to_json
    from chat.turns.follow import Position, follow_turn

    arguments = {"feedback_to_user": "Looking up pay", "query": "pay"}
    call = {"type": "tool_call", "seq": 3, "tool": "t", "call_id": "a", "arguments": arguments}
    done = {"type": "done", "message_id": "1", "state": "complete"}
    inbox = Inbox(
        {"type": "turn.event", "answer_id": 1, "event": call},
        {"type": "turn.event", "answer_id": 1, "event": {"type": "tool_feedback",
                                                         "call_id": "a", "feedback": "late"}},
        {"type": "turn.event", "answer_id": 1, "event": done, "written": {"seq": 3, "text": 0}},
    )  # fmt: skip
    followed = follow_turn(1, inbox, conversation_id=alice_conversation.pk, after=Position(seq=2))
    got = [to_json(event) async for event in followed]
    assert got == [
        to_json(ToolFeedback("a", "Looking up pay")), to_json(from_json(call)), done
        | {"summary": {"icon": "", "text": ""}},
    ]  # fmt: skip
