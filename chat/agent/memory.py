"""What the model remembers: earlier turns as chat messages, trimmed from the oldest.

A character budget rather than tokens: tiktoken downloads its encodings at run time, which a
self-hosted or offline deployment cannot rely on, and providers other than OpenAI tokenise
differently anyway. Four characters to a token is the usual rule of thumb."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from activity.recording.events import RecordedEvent, ToolCall, ToolResult

ChatMessage = dict[str, Any]


def turn_messages(
    role: str, content: str, events: Iterable[RecordedEvent] = ()
) -> list[ChatMessage]:
    """One stored message as the provider needs to see it again: an answer brings back the
    tool calls it made and their results, paired, before its text. The calls an app made
    (MCP Apps) were not the model's: they are not told as its own."""
    if role == "user":
        return [{"role": "user", "content": content}]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    messages: list[ChatMessage] = []
    for event in events:
        if isinstance(event, ToolCall) and not event.origin and event.call_id in results:
            result = results[event.call_id]
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": event.call_id,
                            "type": "function",
                            "function": {
                                "name": event.tool,
                                "arguments": json.dumps(event.arguments, ensure_ascii=False),
                            },
                        }
                    ],
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": event.call_id,
                    "content": result.content or json.dumps({"error": result.summary}),
                }
            )
    if content.strip():
        messages.append({"role": "assistant", "content": content})
    return messages


def group_turns(messages: list[ChatMessage]) -> list[list[ChatMessage]]:
    turns: list[list[ChatMessage]] = []
    for message in messages:
        if message["role"] == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def trim(messages: list[ChatMessage], budget: int) -> list[ChatMessage]:
    """Drops whole turns from the oldest until the rest fits the budget; the newest turn (the
    question being answered) always stays, and a tool call is never split from its result."""
    turns = group_turns(messages)
    sizes = [sum(_size(m) for m in turn) for turn in turns]
    total = sum(sizes)
    start = 0
    while total > budget and start < len(turns) - 1:
        total -= sizes[start]
        start += 1
    return [message for turn in turns[start:] for message in turn]


def _size(message: ChatMessage) -> int:
    size = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        size += len(call["function"]["arguments"]) + len(call["function"]["name"])
    return size
