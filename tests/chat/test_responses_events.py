"""The Responses stream's events as the reader takes them: the types it reads are the SDK's
own (a renamed event fails here, not in production), every other type of the SDK's union is
passed over, and a call's feedback reaches the status line while its arguments still stream."""

from __future__ import annotations

import json
import typing
from typing import Any

import httpx2
from openai.types.responses import ResponseStreamEvent

from activity.recording.events import Status, ToolFeedback
from chat.agent.builtin_tools import CALCULATOR
from chat.agent.calls import ToolCallAssembler
from chat.agent.chunks import Chunk
from chat.agent.responses import CARRIED_LIMIT, ResponseReader
from chat.agent.tools import ToolRegistry
from tests.support.responses_server import Output

# What chat.agent.responses reads; docs/providers.md lists them for people.
READ = {
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
}


def sdk_event_types() -> set[str]:
    union = typing.get_args(typing.get_args(ResponseStreamEvent)[0])
    return {typing.get_args(event.model_fields["type"].annotation)[0] for event in union}


def reader() -> ResponseReader:
    return ResponseReader(httpx2.Request("POST", "http://provider.test/v1/responses"))


def test_every_type_read_is_one_the_sdk_streams():
    assert sdk_event_types() >= READ


def test_every_other_type_of_the_sdk_is_passed_over():
    for kind in sorted(sdk_event_types() - READ):
        assert reader().read({"type": kind, "output_index": 0, "delta": "x"}) == Chunk(), kind


def test_a_calls_feedback_is_shown_as_soon_as_its_string_closes():
    arguments = json.dumps({"feedback_to_user": "Adding it up", "expression": "1+1"})
    events = Output().calls(("call_1", "calculator", arguments), size=3).events()
    read, calls = reader(), ToolCallAssembler(ToolRegistry.of([CALCULATOR]), 0)
    shown: list[tuple[str, str]] = []
    for event in events:
        for delta in read.read(event).tool_calls:
            for line in calls.feed(delta):
                if isinstance(line, ToolFeedback):
                    shown.append((event["type"], line.feedback))
                elif isinstance(line, Status):
                    shown.append((event["type"], line.message))

    assert shown == [
        ("response.output_item.added", "Calculating…"),
        ("response.function_call_arguments.delta", "Adding it up"),
        ("response.function_call_arguments.delta", "Adding it up"),
    ]
    (call,) = calls.completed()
    assert (call.call_id, call.name, call.arguments) == ("call_1", "calculator", arguments)


def test_arguments_only_in_the_items_end_are_taken_from_it_once():
    arguments = json.dumps({"expression": "2*3"})
    streamed = Output().calls(("call_1", "calculator", arguments)).events()
    ends = [e for e in streamed if e["type"] != "response.function_call_arguments.delta"]
    read, calls = reader(), ToolCallAssembler(ToolRegistry.of([CALCULATOR]), 0)
    for event in ends:
        for delta in read.read(event).tool_calls:
            calls.feed(delta)

    (call,) = calls.completed()
    assert call.arguments == arguments


def test_only_encrypted_reasoning_of_a_bounded_size_is_carried():
    read = reader()
    for index, encrypted in enumerate(["gAAAA-small", "x" * (CARRIED_LIMIT + 1), None]):
        item: dict[str, Any] = {"type": "reasoning", "id": f"rs_{index}", "summary": [],
                "encrypted_content": encrypted, "status": "completed"}  # fmt: skip
        read.read({"type": "response.output_item.done", "output_index": index, "item": item})

    assert read.carried == [
        {"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "gAAAA-small"}
    ]
