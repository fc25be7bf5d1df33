"""The model's request and the chunks of its streamed reply, as plain JSON.

The SDK still sends the request (auth, base URL, timeouts, retries, the status's errors),
but neither converts the request through its type hints nor builds a typed model per
chunk, nor reads the stream (chat.agent.sse does): profiled, those cost more CPU per turn
than the whole answer's trip to the browser, and the loop reads five fields. The provider
is untrusted: a field of the wrong type makes the reply unreadable, said in words for
people."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
from django.utils.translation import gettext as _

from chat.agent.errors import ProviderError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# Where OpenAI-compatible servers put a reasoning model's thinking in a streamed delta:
# DeepSeek and vLLM `reasoning_content`, Ollama and OpenRouter `reasoning` (OpenRouter also
# `reasoning_details`, the same text again, read only when the others are absent).
REASONING_FIELDS = ("reasoning_content", "reasoning")


async def stream_completion(client: AsyncOpenAI, body: dict[str, Any]) -> httpx2.Response:
    """POST /chat/completions, streamed: the response whose body is still to be read
    (chat.agent.replies reads it), once the SDK has seen its status."""
    return await client.post(
        "/chat/completions",
        body={**body, "stream": True},
        options={"security": {"bearer_auth": True}, "idempotency_key": request_key()},
        cast_to=httpx2.Response,
        stream=True,
    )


# The SDK makes a key for each request from a fresh uuid4 (its retries reuse it), a system
# call each time; one random prefix per process and a count are as unique.
_PROCESS_KEY = f"glassbox-{uuid.uuid4()}"
_requests = itertools.count()


def request_key() -> str:
    return f"{_PROCESS_KEY}-{next(_requests)}"


@dataclass(frozen=True, slots=True)
class ToolDelta:
    """A piece of one tool call: its id and name come first, its arguments in pieces."""

    index: int
    id: str
    name: str
    arguments: str


# Not frozen: a frozen dataclass sets each field through object.__setattr__, which made
# building one per streamed chunk three times slower.
@dataclass(slots=True)
class Chunk:
    """What the loop reads of one streamed chunk (of its first choice)."""

    model: str = ""
    usage: Mapping[str, Any] | None = None
    has_choice: bool = False
    finish_reason: str | None = None
    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolDelta, ...] = ()


def read_chunk(data: object) -> Chunk:
    """One chunk as the provider sent it; raises ProviderError if it cannot be read."""
    # JSON objects are dicts: checked as such, not as Mappings (an ABC check costs several
    # times more, and a streamed reply is read a chunk per token).
    if type(data) is not dict:
        raise _unreadable()
    choices = _typed(data.get("choices"), list) or []
    model = _typed(data.get("model"), str) or ""
    usage = _typed(data.get("usage"), dict)
    if not choices:
        return Chunk(model=model, usage=usage)
    choice = _typed(choices[0], dict)
    if choice is None:
        raise _unreadable()
    delta = _typed(choice.get("delta"), dict) or {}
    return Chunk(
        model=model,
        usage=usage,
        has_choice=True,
        finish_reason=_typed(choice.get("finish_reason"), str),
        content=_typed(delta.get("content"), str) or "",
        reasoning=_reasoning(delta),
        tool_calls=_tool_deltas(delta.get("tool_calls")),
    )


def _typed(value: Any, kind: type) -> Any:
    """`value` if it is a `kind`, None if absent; anything else cannot be read."""
    if value is None or isinstance(value, kind):
        return value
    raise _unreadable()


def _tool_deltas(calls: object) -> tuple[ToolDelta, ...]:
    if calls is None:
        return ()
    return tuple(_tool_delta(position, item) for position, item in enumerate(_typed(calls, list)))


def _reasoning(delta: Mapping[str, Any]) -> str:
    for name in REASONING_FIELDS:
        value = delta.get(name)
        if isinstance(value, str) and value:
            return value
    details = delta.get("reasoning_details")
    if isinstance(details, list):
        return "".join(
            d["text"] for d in details if isinstance(d, dict) and isinstance(d.get("text"), str)
        )
    return ""


def _tool_delta(position: int, item: object) -> ToolDelta:
    if type(item) is not dict:
        raise _unreadable()
    index = item.get("index")
    function = _typed(item.get("function"), dict) or {}
    return ToolDelta(
        # A provider that leaves the index out sends its calls whole, one per position.
        index=index if isinstance(index, int) and not isinstance(index, bool) else position,
        id=_typed(item.get("id"), str) or "",
        name=_typed(function.get("name"), str) or "",
        arguments=_typed(function.get("arguments"), str) or "",
    )


def tokens(usage: Mapping[str, Any] | None, *path: str) -> int | None:
    """A count from the reply's usage, None if the provider did not say."""
    value: Any = usage
    for name in path:
        value = value.get(name) if isinstance(value, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _unreadable() -> ProviderError:
    return ProviderError(_("the model provider sent an unreadable reply"))
