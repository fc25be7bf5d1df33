"""The real-provider client: settings, and retries only before the first streamed byte."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from asgiref.sync import async_to_sync

from chat.agent.demo_script import say
from chat.agent.demo_wire import SSEStream
from chat.models import Message
from chat.turns.deps import Dependencies, configured_client, provider
from tests.support.fakes import text_response
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def real_provider(settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_BASE_URL = "http://llm.internal:8080/v1"
    settings.GLASSBOX_MODEL = "qwen2.5"


class BrokenStream(SSEStream):
    """Sends some text, then the connection drops."""

    async def __aiter__(self):
        count = 0
        async for data in super().__aiter__():
            if count == 3:
                raise httpx2.ReadError("connection reset by peer")
            count += 1
            yield data


class FlakyProvider(httpx2.AsyncBaseTransport):
    def __init__(self, failures_before_stream: int, stream_cls=SSEStream) -> None:
        self.failures = failures_before_stream
        self.stream_cls = stream_cls
        self.requests: list[httpx2.Request] = []

    async def handle_async_request(self, request):
        self.requests.append(request)
        if len(self.requests) <= self.failures:
            return httpx2.Response(
                500, json={"error": {"message": "overloaded"}}, headers={"retry-after-ms": "5"}
            )
        stream = self.stream_cls(text_response("Hello from the provider, in parts."), 0)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)


def run(conversation, transport) -> Message:
    return run_turn(
        conversation, "Hi", Dependencies(client_factory=lambda: configured_client(transport))
    )


def test_a_key_selects_the_real_provider_and_its_settings(real_provider, settings):
    assert not provider().is_demo

    async def shared_clients():
        return configured_client(), configured_client()

    client, again = async_to_sync(shared_clients)()
    assert client is again  # one client for the turns of a process: no SSL setup per turn
    assert str(client.base_url) == "http://llm.internal:8080/v1/"
    assert client.max_retries == 2
    assert client.timeout.connect == settings.GLASSBOX_CONNECT_TIMEOUT
    assert client.timeout.read == settings.GLASSBOX_READ_TIMEOUT


def test_without_a_key_the_demo_model_answers(settings):
    settings.OPENAI_API_KEY = ""
    assert provider().is_demo


def test_errors_before_the_first_byte_are_retried(real_provider, alice_conversation):
    transport = FlakyProvider(failures_before_stream=2)
    answer = run(alice_conversation, transport)
    assert len(transport.requests) == 3
    assert answer.state == Message.State.COMPLETE
    assert answer.content == "Hello from the provider, in parts."
    assert transport.requests[0].url.path == "/v1/chat/completions"
    assert transport.requests[0].headers["authorization"] == "Bearer sk-test"


def test_a_stream_that_breaks_after_text_is_never_replayed(real_provider, alice_conversation):
    transport = FlakyProvider(failures_before_stream=0, stream_cls=BrokenStream)
    answer = run(alice_conversation, transport)
    assert len(transport.requests) == 1
    assert answer.state == Message.State.FAILED
    assert answer.content == "Hello from"  # what arrived is kept
    assert answer.answer_feed.summary_icon == "❌"
    # Seed 002: the provider was reached; its reply broke off.
    assert (
        answer.answer_feed.summary_text
        == "The model provider's reply broke off before it was finished"
    )


def test_a_turn_past_its_time_limit_fails_visibly_and_keeps_its_text(
    settings, gate, alice_conversation
):
    settings.GLASSBOX_DEMO_DELAY = 0
    settings.GLASSBOX_TURN_TIMEOUT = 1.0
    gate(after=4)  # the answer stops mid-stream and never goes on: only the time limit ends it
    answer = run_turn(alice_conversation, "Tell me a joke")
    assert answer.state == Message.State.FAILED
    full = say("direct", "en", question="Tell me a joke")
    assert answer.content and full.startswith(answer.content)  # what arrived in time is kept
    assert answer.content != full
    assert (answer.answer_feed.summary_icon, answer.answer_feed.summary_text) == (
        "❌",
        "The answer took too long",
    )


def test_the_demo_models_reply_is_a_body_read_once():
    # As a network body: a reader that drains it after [DONE] to keep the connection finds
    # nothing more, not the whole reply made again (which held the loop as long again).
    stream = SSEStream([{"content": "a"}, {"content": "b"}], delay=0)

    async def read_twice() -> tuple[list[bytes], list[bytes]]:
        first = [part async for part in stream]
        return first, [part async for part in stream]

    first, again = asyncio.run(read_twice())
    assert len(first) == 3 and first[-1] == b"data: [DONE]\n\n"
    assert again == []
