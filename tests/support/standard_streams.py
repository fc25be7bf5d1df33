"""Reading a turn as a program that speaks AG-UI or the AI SDK's UI message stream would:
frames with their ids, and what a client rebuilds from them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


def stream_url(conversation, answer_id, wire: str) -> str:
    return f"/api/conversations/{conversation.pk}/messages/{answer_id}/{wire}/"


def parse_frames(text: str) -> list[tuple[str | None, Any]]:
    """(id, data) per SSE block; data is JSON, or the text `[DONE]`."""
    frames = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        data = fields["data"]
        frames.append((fields.get("id"), data if data == "[DONE]" else json.loads(data)))
    return frames


async def read_frames(client, url: str, last_event_id: str | None = None):
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    response = await client.get(url, headers=headers)
    assert response.status_code == 200, response.content
    body = b"".join([chunk async for chunk in response.streaming_content])
    return response, parse_frames(body.decode())


@dataclass
class Rebuilt:
    """What a client has of a turn: its text, its tool calls' arguments and outputs."""

    text: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    ends: list[str] = field(default_factory=list)


def rebuild_agui(connections: list[list[Any]]) -> Rebuilt:
    """Each connection's events checked as AG-UI's verifier does (in brief: one run, nothing
    before its start, content only in an open message or call, all closed at its end)."""
    rebuilt = Rebuilt()
    args: dict[str, str] = {}
    for events in connections:
        run, text, tools, steps = False, set(), set(), set()
        for event in events:
            kind = event["type"]
            assert run or kind == "RUN_STARTED", f"{kind} before RUN_STARTED"
            if kind == "RUN_STARTED":
                assert not run
                run = True
            elif kind == "TEXT_MESSAGE_START":
                assert event["messageId"] not in text
                text.add(event["messageId"])
            elif kind == "TEXT_MESSAGE_CONTENT":
                assert event["messageId"] in text
                rebuilt.text += event["delta"]
            elif kind == "TEXT_MESSAGE_END":
                text.remove(event["messageId"])
            elif kind == "TOOL_CALL_START":
                assert event["toolCallId"] not in tools
                tools.add(event["toolCallId"])
            elif kind == "TOOL_CALL_ARGS":
                assert event["toolCallId"] in tools
                args[event["toolCallId"]] = args.get(event["toolCallId"], "") + event["delta"]
            elif kind == "TOOL_CALL_END":
                tools.remove(event["toolCallId"])
            elif kind == "TOOL_CALL_RESULT":
                rebuilt.results[event["toolCallId"]] = json.loads(event["content"])
            elif kind == "STEP_STARTED":
                assert event["stepName"] not in steps
                steps.add(event["stepName"])
            elif kind == "STEP_FINISHED":
                steps.remove(event["stepName"])
            elif kind in ("RUN_FINISHED", "RUN_ERROR"):
                assert not (text or tools or steps), (text, tools, steps)
                rebuilt.ends.append(kind)
                run = False
    rebuilt.arguments = {call: json.loads(value) for call, value in args.items()}
    return rebuilt


def rebuild_ui_stream(connections: list[list[Any]]) -> Rebuilt:
    """Each connection's chunks (the last ones end with `[DONE]`, a dropped one does not)
    read as the AI SDK's reader does: every read begins with no text part open (a delta only
    in a part started on this connection), `reset-step` drops the parts of the last step,
    tool parts are found again by call id across connections."""
    rebuilt = Rebuilt()
    parts: list[list[str]] = []  # the text parts, each its deltas; [] also marks a step
    steps: list[int] = []  # where each step's parts begin
    for number, chunks in enumerate(connections):
        assert number or chunks[0]["type"] == "start"
        text: dict[str, list[str]] = {}
        for chunk in chunks:
            if chunk == "[DONE]":
                continue
            kind = chunk["type"]
            if kind == "start-step":
                steps.append(len(parts))
            elif kind == "reset-step":
                del parts[steps[-1] if steps else 0 :]
                text = {}
            elif kind == "text-start":
                text[chunk["id"]] = []
                parts.append(text[chunk["id"]])
            elif kind == "text-delta":
                text[chunk["id"]].append(chunk["delta"])
            elif kind == "text-end":
                del text[chunk["id"]]
            elif kind == "tool-input-available":
                rebuilt.arguments[chunk["toolCallId"]] = chunk["input"]
            elif kind == "tool-output-available":
                assert chunk["toolCallId"] in rebuilt.arguments
                rebuilt.results[chunk["toolCallId"]] = chunk["output"]
            elif kind == "finish":
                rebuilt.ends.append(chunk["finishReason"])
            elif kind == "abort":
                rebuilt.ends.append("abort")
    assert len(parts) <= 1, "the answer is one text part"
    rebuilt.text = "".join(parts[0]) if parts else ""
    return rebuilt
