"""The model provider's reply, read chunk by chunk: a stream as the API sends it, or a whole
reply from a provider (or a proxy) that answered a streamed request in one piece. What
cannot be read ends the turn with a reason for people, never a parser's traceback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx2
from django.utils.translation import gettext as _

from chat.agent.chunks import Chunk, read_chunk
from chat.agent.errors import ProviderError
from chat.agent.sse import stream_data


async def readable(
    response: httpx2.Response,
    read: Callable[[object], Chunk] = read_chunk,
    whole: Callable[[object], list[object]] | None = None,
) -> AsyncIterator[Chunk]:
    """The reply's chunks, each event's data `read` into one (a chat completion's chunks by
    default); a chunk that is not valid JSON or not shaped as one, or a connection cut once
    the provider had begun to answer, ends the turn with a clear reason (a stall stays a
    timeout). A whole reply is read as the events `whole` makes of it (by default, a chat
    completion's one chunk)."""
    import openai  # loaded already: the response came through its client

    if _whole(response):
        for data in (whole or _as_one_chunk)(await _whole_body(response)):
            yield read(data)
        return
    chunks = aiter(stream_data(response))
    while True:
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except ValueError as exc:
            raise ProviderError(_("the model provider sent an unreadable reply")) from exc
        except (httpx2.TimeoutException, openai.APITimeoutError):
            raise
        except (httpx2.TransportError, openai.APIConnectionError) as exc:
            raise _broke_off() from exc
        yield read(chunk)


def _whole(response: httpx2.Response) -> bool:
    return response.headers.get("content-type", "").lower().startswith("application/json")


def _broke_off() -> ProviderError:
    return ProviderError(_("the model provider's reply broke off before it was finished"))


async def _whole_body(response: httpx2.Response) -> object:
    """A reply sent in one piece, parsed."""
    import openai

    try:
        body = await response.aread()
    except (httpx2.TimeoutException, openai.APITimeoutError):
        raise
    except httpx2.TransportError as exc:
        raise _broke_off() from exc
    finally:
        await response.aclose()
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ProviderError(_("the model provider sent an unreadable reply")) from exc


def _as_one_chunk(whole: object) -> list[object]:
    """A whole chat completion as the one chunk that says all of it: each choice's message
    becomes its delta (its tool calls numbered as a stream numbers them)."""
    try:
        if not isinstance(whole, dict):
            raise TypeError("not an object")
        choices = []
        for choice in whole["choices"]:
            delta = dict(choice.get("message") or {})
            delta["tool_calls"] = [
                {**call, "index": index}
                for index, call in enumerate(delta.get("tool_calls") or [])
            ] or None
            choices.append(
                {
                    "index": choice.get("index", 0),
                    "delta": delta,
                    "finish_reason": choice.get("finish_reason"),
                }
            )
        return [{**whole, "choices": choices}]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ProviderError(_("the model provider sent an unreadable reply")) from exc
