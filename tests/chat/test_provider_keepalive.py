"""A provider that closes a kept-alive connection while it is idle costs the next request
nothing: the client opens a new one instead of failing on the closed one, without retries."""

from __future__ import annotations

import asyncio

import pytest

from chat.agent.chunks import stream_completion
from chat.agent.replies import readable
from tests.support import socket_faults
from tests.support.completions import ask, with_client


@pytest.fixture(autouse=True)
def provider_key(settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.GLASSBOX_PROVIDER_RETRIES = 0


def test_a_connection_the_provider_closed_while_idle_is_not_used_again(settings):
    provider = socket_faults.IdleCloser()

    async def twice(client) -> list[str]:
        first = await ask(client)
        await asyncio.to_thread(provider.close_idle)
        return [first, await ask(client)]

    with socket_faults.faulty_provider(provider) as url:
        settings.OPENAI_BASE_URL = url
        assert with_client(twice) == ["Hello", "Hello"]
    assert provider.connections == 2


def test_an_http_proxy_from_the_environment_carries_the_requests(settings, monkeypatch):
    # A name that resolves nowhere: only the proxy can reach it.
    settings.OPENAI_BASE_URL = "http://llm.glassbox.invalid/v1"
    proxy = socket_faults.Recorder()
    with socket_faults.faulty_provider(proxy) as url:
        monkeypatch.setenv("HTTP_PROXY", url.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert with_client(ask) == "Hello"
    assert proxy.request_lines == ["POST http://llm.glassbox.invalid/v1/chat/completions HTTP/1.1"]


def test_chunked_streams_read_to_their_end_keep_their_connection(settings):
    provider = socket_faults.Chunked()

    async def thrice(client) -> list[str]:
        return [await ask(client) for _ in range(3)]

    with socket_faults.faulty_provider(provider) as url:
        settings.OPENAI_BASE_URL = url
        assert with_client(thrice) == ["Hello"] * 3
    assert provider.connections == 1


def test_a_reply_left_unread_mid_stream_leaves_nothing_for_the_next_request(settings):
    provider = socket_faults.Chunked(partial=1)

    async def stopped_then_asked(client) -> tuple[str, str]:
        response = await stream_completion(client, {"model": "m", "messages": []})
        first = (await anext(aiter(readable(response)))).content
        await response.aclose()  # a stopped turn
        return first, await ask(client)

    with socket_faults.faulty_provider(provider) as url:
        settings.OPENAI_BASE_URL = url
        assert with_client(stopped_then_asked) == ("Hello", "Hello")
    assert provider.connections == 2
