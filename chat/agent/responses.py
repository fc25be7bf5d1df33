"""OpenAI's Responses API: the loop's conversation sent as input items, and the reply's stream
of typed events read into the same chunks a chat completion gives (chat.agent.chunks), so the
loop reads one shape whichever API answers.

The request goes out through the SDK (auth, base URL, timeouts, retries, the status's
errors) and the stream is read by chat.agent.sse, for the reasons chat.agent.chunks gives:
`client.responses.create(stream=True)` would build a typed event per token, about 165 µs of
CPU each against 2 µs for this reader (timeit, one text delta, openai 3.57).
The event types read are those of the SDK's `ResponseStreamEvent` union (openai 3.57;
tests/chat/test_responses_events.py pins the names); the others (audio, hosted tools) are
for features Glassbox does not ask for and are passed over. With `store=false` the provider
keeps nothing: the whole conversation goes with every request, and a reasoning model's
encrypted reasoning is carried from one round to the next (and over an approval's pause)
inside the conversation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx2
from django.utils.translation import gettext as _

from chat.agent.chunks import Chunk, ToolDelta, request_key
from chat.agent.errors import ProviderError

if TYPE_CHECKING:
    import openai

# The key of an assistant message that carries the reasoning items of its round: only this
# module writes and reads it, and it never reaches a Chat Completions request.
CARRIED = "glassbox_reasoning"
# An encrypted reasoning item larger than this is not carried: a provider's own blob, stored
# with a paused turn and sent back, must not be able to grow without bound.
CARRIED_LIMIT = 256 * 1024
# What a reasoning model is asked to say of its thinking (`reasoning.summary`); "off" asks
# for nothing, for models that refuse reasoning options.
SUMMARIES = ("auto", "concise", "detailed", "off")


def request_body(
    *,
    model: str,
    conversation: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    reasoning_summary: str,
) -> dict[str, Any]:
    """The body of one streamed `POST /responses` for the loop's conversation (chat
    messages, as chat.agent.memory writes them, the system prompt first)."""
    instructions = [m["content"] for m in conversation if m["role"] == "system"]
    body: dict[str, Any] = {
        "model": model,
        "input": input_items(conversation),
        "store": False,
        "stream": True,
    }
    if instructions:
        body["instructions"] = "\n\n".join(instructions)
    if tools:
        body["tools"] = [function_tool(tool) for tool in tools]
    if reasoning_summary != "off":
        body["reasoning"] = {"summary": reasoning_summary}
        body["include"] = ["reasoning.encrypted_content"]
    return body


def input_items(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Responses input items: an answer's calls become `function_call`
    items after the reasoning that led to them, their results `function_call_output`."""
    items: list[dict[str, Any]] = []
    for message in conversation:
        role = message["role"]
        if role == "system":
            continue
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": message["content"],
                }
            )
            continue
        items += message.get(CARRIED) or []
        if message.get("content"):
            items.append({"role": role, "content": message["content"]})
        for call in message.get("tool_calls") or []:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                }
            )
    return items


def function_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool schema as the Responses API takes it (flat, not nested)."""
    function = tool["function"]
    converted = {"type": "function", "name": function["name"]}
    for key in ("description", "parameters", "strict"):
        if key in function:
            converted[key] = function[key]
    return converted


async def stream_response(client: openai.AsyncOpenAI, body: dict[str, Any]) -> httpx2.Response:
    """POST /responses, streamed: the response whose body is still to be read."""
    return await client.post(
        "/responses",
        body=body,
        options={"security": {"bearer_auth": True}, "idempotency_key": request_key()},
        cast_to=httpx2.Response,
        stream=True,
    )


class ResponseReader:
    """Reads one reply's events, in order, into chunks: text and refusals as the answer,
    reasoning summaries (or a model's raw reasoning text) as its thinking, function calls as
    tool-call deltas numbered by their output index, usage as Chat Completions names it.
    Remembers the encrypted reasoning items to carry to the next request."""

    def __init__(self, request: httpx2.Request) -> None:
        # The request an error in the stream is raised with, as the SDK raises its own.
        self.request = request
        self.carried: list[dict[str, Any]] = []
        # The output items something was shown of, and each call's arguments so far: a
        # server that sends only an item's end (or only the response's) still gets it shown
        # once.
        self.shown: set[int] = set()
        self.arguments: dict[int, str] = {}
        self.summaries: set[tuple[int, int]] = set()
        self.ended: set[int] = set()

    def read(self, data: object) -> Chunk:
        if type(data) is not dict:
            raise unreadable()
        kind = data.get("type")
        if not isinstance(kind, str):
            raise unreadable()
        index = data.get("output_index")
        index = index if type(index) is int else -1
        match kind:
            case "response.output_text.delta" | "response.refusal.delta":
                self.shown.add(index)
                return Chunk(has_choice=True, content=_text(data, "delta"))
            case "response.reasoning_summary_text.delta":
                self.shown.add(index)
                part = _int(data.get("summary_index"))
                # Parts of one summary are paragraphs of their own.
                gap = "\n\n" if self.summaries and (index, part) not in self.summaries else ""
                self.summaries.add((index, part))
                return Chunk(has_choice=True, reasoning=gap + _text(data, "delta"))
            case "response.reasoning_text.delta":
                self.shown.add(index)
                return Chunk(has_choice=True, reasoning=_text(data, "delta"))
            case "response.output_item.added":
                return self._calls(index, _item(data))
            case "response.function_call_arguments.delta":
                delta = _text(data, "delta")
                self.arguments[index] = self.arguments.get(index, "") + delta
                return Chunk(has_choice=True, tool_calls=(ToolDelta(index, "", "", delta),))
            case "response.function_call_arguments.done" if index in self.shown:
                item = {"type": "function_call", "arguments": _text(data, "arguments")}
                return self._calls(index, item)
            case "response.output_item.done":
                return self._ended(index, _item(data))
            case "response.created" | "response.in_progress" | "response.queued":
                return Chunk(model=_model(_response(data)))
            case "response.completed" | "response.incomplete":
                return self._completed(kind, _response(data))
            case "response.failed":
                error = _response(data).get("error")
                raise self._failed(error if isinstance(error, dict) else {})
            case "error":
                raise self._failed(data)
        return Chunk()

    def _calls(self, index: int, item: dict[str, Any]) -> Chunk:
        """A function call's item: announced when it first appears (its id and name), with
        whatever of its arguments no delta brought. A final text that disagrees with the
        deltas loses to what was shown and recorded."""
        if item.get("type") != "function_call":
            return Chunk()
        arguments, sent = _text(item, "arguments"), self.arguments.get(index, "")
        rest = arguments[len(sent) :] if arguments.startswith(sent) else ""
        self.arguments[index] = sent + rest
        if index not in self.shown:
            self.shown.add(index)
            call = ToolDelta(index, _text(item, "call_id"), _text(item, "name"), rest)
            return Chunk(has_choice=True, tool_calls=(call,))
        if not rest:
            return Chunk()
        return Chunk(has_choice=True, tool_calls=(ToolDelta(index, "", "", rest),))

    def _ended(self, index: int, item: dict[str, Any]) -> Chunk:
        if index in self.ended:
            return Chunk()
        self.ended.add(index)
        kind = item.get("type")
        if kind == "function_call":
            return self._calls(index, item)
        if kind == "reasoning":
            self._carry(item)
            if index in self.shown:
                return Chunk()
            self.shown.add(index)
            summary = "\n\n".join(_parts(item.get("summary"), "summary_text"))
            return Chunk(has_choice=True, reasoning=summary) if summary else Chunk()
        if kind == "message" and index not in self.shown:
            self.shown.add(index)
            content = _parts(item.get("content"), "output_text", "refusal")
            return Chunk(has_choice=True, content="".join(content))
        return Chunk()

    def _carry(self, item: dict[str, Any]) -> None:
        """A reasoning item goes back only with its encrypted content: with `store=false`
        the provider cannot find it by its id alone."""
        encrypted = item.get("encrypted_content")
        if not isinstance(encrypted, str) or not encrypted or len(encrypted) > CARRIED_LIMIT:
            return
        summary = [
            {"type": "summary_text", "text": text}
            for text in _parts(item.get("summary"), "summary_text")
        ]
        carried = {"type": "reasoning", "summary": summary, "encrypted_content": encrypted}
        if isinstance(item.get("id"), str):
            carried["id"] = item["id"]
        self.carried.append(carried)

    def _completed(self, kind: str, response: dict[str, Any]) -> Chunk:
        """The reply's end: what no event showed of its output, its usage and why it ended
        (an incomplete one as Chat Completions says it, its text kept)."""
        ended = Chunk(has_choice=True)
        output = response.get("output")
        for position, item in enumerate(output if isinstance(output, list) else []):
            if isinstance(item, dict):
                _joined(ended, self._ended(position, item))
        if kind == "response.completed":
            ended.finish_reason = "tool_calls" if self.arguments else "stop"
        else:
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            ended.finish_reason = "content_filter" if reason == "content_filter" else "length"
        ended.model = _model(response)
        ended.usage = chat_usage(response.get("usage"))
        return ended

    def _failed(self, error: Mapping[str, Any]) -> openai.APIError:
        """An `error` event or a failed response, as the SDK raises a chat stream's error:
        the feed says the provider stopped with an error, in its own words."""
        message = error.get("message")
        if not isinstance(message, str) or not message:
            message = "An error occurred during streaming"
        body = {"message": message, "code": error.get("code")}
        import openai

        return openai.APIError(message=message, request=self.request, body=body)


def chat_usage(usage: object) -> dict[str, Any] | None:
    """The Responses usage as Chat Completions names it, as the loop and the audit read it."""
    if not isinstance(usage, Mapping):
        return None
    inputs = usage.get("input_tokens_details")
    outputs = usage.get("output_tokens_details")
    return {
        "prompt_tokens": usage.get("input_tokens"),
        "completion_tokens": usage.get("output_tokens"),
        "prompt_tokens_details": {
            "cached_tokens": inputs.get("cached_tokens") if isinstance(inputs, Mapping) else None
        },
        "completion_tokens_details": {
            "reasoning_tokens": (
                outputs.get("reasoning_tokens") if isinstance(outputs, Mapping) else None
            )
        },
    }


def whole_events(body: object) -> list[object]:
    """A whole Response (a server that answered the streamed request in one piece) as the
    one event that says all of it."""
    if not isinstance(body, dict) or body.get("object") != "response":
        raise unreadable()
    status = body.get("status")
    if status == "failed":
        return [{"type": "response.failed", "response": body}]
    kind = "response.incomplete" if status == "incomplete" else "response.completed"
    return [{"type": kind, "response": body}]


def _joined(into: Chunk, more: Chunk) -> None:
    into.content += more.content
    into.reasoning += more.reasoning
    into.tool_calls += more.tool_calls


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise unreadable()
    return value


def _int(value: object) -> int:
    return value if type(value) is int else 0


def _item(data: Mapping[str, Any]) -> dict[str, Any]:
    item = data.get("item")
    if type(item) is not dict:
        raise unreadable()
    return item


def _response(data: Mapping[str, Any]) -> dict[str, Any]:
    response = data.get("response")
    return response if type(response) is dict else {}


def _model(response: Mapping[str, Any]) -> str:
    model = response.get("model")
    return model if isinstance(model, str) else ""


def _parts(parts: object, *kinds: str) -> list[str]:
    """The texts of an item's parts of `kinds` (a refusal's text is its `refusal`)."""
    texts = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and part.get("type") in kinds:
            text = part.get("refusal" if part["type"] == "refusal" else "text")
            if isinstance(text, str):
                texts.append(text)
    return texts


def unreadable() -> ProviderError:
    return ProviderError(_("the model provider sent an unreadable reply"))
