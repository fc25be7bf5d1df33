"""The two APIs a model is asked through, behind one small interface: the loop opens a round's
reply and reads the same chunks from either (chat.agent.chunks), and records the calls it
asked for in one form of conversation (chat messages) that each API sends its own way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from chat.agent.calls import PendingCall, is_json
from chat.agent.chunks import Chunk, stream_completion
from chat.agent.policy import AgentPolicy
from chat.agent.replies import readable
from chat.agent.responses import (
    CARRIED,
    ResponseReader,
    request_body,
    stream_response,
    whole_events,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

CHAT_COMPLETIONS = "chat_completions"
RESPONSES = "responses"


@dataclass(slots=True)
class Reply:
    """One round's streamed reply, and what it leaves to carry to the next request (a
    reasoning model's encrypted reasoning, filled in as the chunks are read)."""

    chunks: AsyncIterator[Chunk]
    carried: list[dict[str, Any]] = field(default_factory=list)

    def assistant(self, text: str, calls: list[PendingCall]) -> dict[str, Any]:
        """The round as the conversation keeps it: its text, the calls it asked for."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments if is_json(call.arguments) else "{}",
                    },
                }
                for call in calls
            ],
        }
        if self.carried:
            message[CARRIED] = list(self.carried)
        return message


class ModelApi(Protocol):
    async def open(
        self,
        client: AsyncOpenAI,
        policy: AgentPolicy,
        conversation: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None = None,
    ) -> Reply:
        """Sends one round's request; its reply once the provider has said its status.
        `max_tokens` bounds what the model writes (an MCP server's sampling request)."""
        ...


class ChatCompletions:
    async def open(
        self,
        client: AsyncOpenAI,
        policy: AgentPolicy,
        conversation: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None = None,
    ) -> Reply:
        options: dict[str, Any] = {"tools": tools} if tools else {}
        if max_tokens is not None:
            # The current name; `max_tokens` is refused by OpenAI's reasoning models.
            options["max_completion_tokens"] = max_tokens
        if policy.stream_usage:
            options["stream_options"] = {"include_usage": True}
        if any(CARRIED in message for message in conversation):
            # A turn paused over the Responses API and resumed after the setting changed.
            conversation = [without_carried(message) for message in conversation]
        body = {"model": policy.model, "messages": conversation, **options}
        return Reply(readable(await stream_completion(client, body)))


def without_carried(message: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in message.items() if key != CARRIED}


class Responses:
    async def open(
        self,
        client: AsyncOpenAI,
        policy: AgentPolicy,
        conversation: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None = None,
    ) -> Reply:
        body = request_body(
            model=policy.model,
            conversation=conversation,
            tools=tools,
            reasoning_summary=policy.reasoning_summary,
        )
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        response = await stream_response(client, body)
        reader = ResponseReader(response.request)
        return Reply(readable(response, reader.read, whole_events), reader.carried)


MODEL_APIS: dict[str, ModelApi] = {CHAT_COMPLETIONS: ChatCompletions(), RESPONSES: Responses()}
