"""Every way a provider can fail, through the real openai client with a fault-injecting
transport: the turn ends visibly, keeps what arrived, and the conversation stays usable."""

from __future__ import annotations

import json

import httpx2
import pytest
from django.template.loader import render_to_string

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.presentation import cut
from chat.agent.demo_wire import SSEStream
from chat.conversations.selectors import messages_with_feeds
from chat.models import Message
from chat.turns.deps import Dependencies, configured_client
from tests.support.fakes import text_response, tool_call_response
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


class Fault(httpx2.AsyncBaseTransport):
    def __init__(self, respond):
        self.respond = respond
        self.requests = 0

    async def handle_async_request(self, request):
        self.requests += 1
        return self.respond(request)


def refused(request):
    raise httpx2.ConnectError("[Errno 111] Connection refused")


def status(code, message=None, *, json=True):
    """An error answer: a JSON body with the provider's message, or a plain one."""
    message = message or f"status {code}"

    def respond(request):
        if json:
            return httpx2.Response(code, json={"error": {"message": message}})
        return httpx2.Response(code, text=message)

    return respond


class StreamThen(SSEStream):
    """Some answer text, then a fault."""

    def __init__(self, fault):
        super().__init__(text_response("Partial answer so far", size=4), 0)
        self.fault = fault

    async def __aiter__(self):
        sent = 0
        async for data in super().__aiter__():
            if sent == 4:
                for item in self.fault():
                    yield item
                return
            sent += 1
            yield data


def streaming(fault):
    def respond(request):
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=StreamThen(fault)
        )

    return respond


def error_event():
    yield b'data: {"error": {"message": "The server had an error", "type": "server_error"}}\n\n'


def stall():
    raise httpx2.ReadTimeout("timed out")
    yield b""


def malformed():
    yield b'data: {"id": "x", "choices": [{"delta": {"content": "oops"\n\n'


def wrong_types():
    """Valid JSON of the wrong shape: the typed fields are read as the API defines them."""
    yield b'data: {"id": "x", "choices": [{"delta": {"content": 42}}]}\n\n'


def wrong_tool_call():
    yield b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "x"}]}}]}\n\n'


def reset():
    raise httpx2.ReadError("[Errno 104] Connection reset by peer")
    yield b""


def closed():
    """A connection-delimited response that just ends: no finish_reason, no [DONE]."""
    yield from ()


FAULTS = {
    "connection refused": (refused, "Could not reach the model provider", ""),
    # Not its words: they may quote part of the key.
    "401": (
        status(401, "Bad API key: sk-te**st"), "The model provider refused our credentials", ""
    ),
    "429": (
        status(429), "The model provider is rate limiting us; try again shortly: “status 429”", ""
    ),
    "500": (status(500), "The model provider answered with an error (500): “status 500”", ""),
    # Its words, on one line and cut, are what tells a context too long from a bad request.
    "400 with a long message": (
        status(400, "This model's maximum context length is 128000 tokens.\n" + "x" * 400),
        "The model provider answered with an error (400): “This model's maximum context "
        "length is 128000 tokens. " + "x" * 145 + "…”",
        "",
    ),
    "502 from a proxy's error page": (
        status(502, "<html><body>Bad gateway</body></html>", json=False),
        "The model provider answered with an error (502)",
        "",
    ),
    "408 in plain text": (
        status(408, "request timed out upstream", json=False),
        "The model provider answered with an error (408): “request timed out upstream”",
        "",
    ),
    "error event mid-stream": (
        streaming(error_event),
        "The model provider stopped with an error: “The server had an error”",
        "Partial answ",
    ),
    "stalled stream": (
        streaming(stall), "The model provider did not answer in time", "Partial answ"
    ),
    "malformed chunk": (
        streaming(malformed), "The model provider sent an unreadable reply", "Partial answ"
    ),
    "chunk of the wrong shape": (
        streaming(wrong_types), "The model provider sent an unreadable reply", "Partial answ"
    ),
    "tool call of the wrong shape": (
        streaming(wrong_tool_call), "The model provider sent an unreadable reply",
        "Partial answ",
    ),
    # Seed 002: a cut after the provider answered is a cut, not "could not reach" it.
    "connection reset mid-stream": (
        streaming(reset), "The model provider's reply broke off before it was finished",
        "Partial answ",
    ),
    "stream closed before the end": (
        streaming(closed), "The model provider's reply broke off before it was finished",
        "Partial answ",
    ),
}  # fmt: skip


@pytest.fixture
def provider(settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.GLASSBOX_PROVIDER_RETRIES = 0


def ask(conversation, transport, question="How do I negotiate my salary?") -> Message:
    return run_turn(
        conversation, question, Dependencies(client_factory=lambda: configured_client(transport))
    )


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_provider_fault_ends_the_turn_visibly_and_keeps_what_arrived(
    provider, alice_conversation, fault
):
    respond, reason, kept = FAULTS[fault]
    answer = ask(alice_conversation, Fault(respond))

    assert answer.state == Message.State.FAILED
    assert answer.content.startswith(kept)
    last = answer.answer_feed.events.order_by("-seq").first()
    assert last is not None
    assert (last.icon, last.message, last.state) == ("❌", reason, "failed")
    # The folded line keeps the start of a long reason (its column holds 200 characters).
    assert (answer.answer_feed.summary_icon, answer.answer_feed.summary_text) == (
        "❌",
        cut(reason, 200),
    )
    assert len(reason) <= 200 or answer.answer_feed.summary_text.endswith("…")

    # The page explains it and offers to ask again.
    (page_answer,) = [m for m in messages_with_feeds(alice_conversation, FeedPrefs()).messages
                      if m.role == "assistant"]  # fmt: skip
    html = render_to_string("chat/_assistant_message.html", {"message": page_answer})
    assert "failed before it was finished" in html
    assert 'name="regenerate"' in html and "Regenerate" in html

    # The conversation stays usable.
    again = ask(alice_conversation, Fault(streaming_ok), question="And now?")
    assert again.state == Message.State.COMPLETE


def streaming_ok(request):
    stream = SSEStream(text_response("All good."), 0)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)


def test_invalid_tool_call_json_falls_back_and_the_turn_completes(provider, alice_conversation):
    responses = [
        tool_call_response(("c1", "search_documents", '{"feedback_to_user": "x", "query": ')),
        text_response("From general knowledge."),
    ]

    def respond(request):
        stream = SSEStream(responses.pop(0), 0)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)

    answer = ask(alice_conversation, Fault(respond))
    assert answer.state == Message.State.COMPLETE
    lines = list(answer.answer_feed.events.filter(kind="status").values_list("icon", "message"))
    assert ("❌", "Knowledge base query failed (malformed arguments)") in lines
    assert answer.content == "From general knowledge."


def test_retries_happen_before_the_first_byte_only(settings, provider, alice_conversation):
    settings.GLASSBOX_PROVIDER_RETRIES = 2
    calls = []

    def respond(request):
        calls.append(request)
        if len(calls) == 1:
            return httpx2.Response(503, json={"error": {}}, headers={"retry-after-ms": "1"})
        return streaming(error_event)(request)

    answer = ask(alice_conversation, Fault(respond))
    assert len(calls) == 2  # one retry for the 503; none once the stream had started
    assert answer.state == Message.State.FAILED
    assert answer.content == "Partial answ"


class Whole(httpx2.AsyncBaseTransport):
    """A provider (or a proxy before it) that answers a streamed request with the whole chat
    completion as one JSON document: a tool call first, then the answer."""

    def __init__(self, *bodies):
        self.bodies = list(bodies)
        self.requests = []

    async def handle_async_request(self, request):
        self.requests.append(json.loads(request.content))
        return httpx2.Response(200, json=self.bodies.pop(0))


def completion(message, finish_reason):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "whole-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }


def test_a_reply_that_is_not_streamed_is_taken_whole(provider, alice_conversation):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "calculator",
            "arguments": '{"expression": "6*7", "feedback_to_user": "Working it out"}',
        },
    }
    transport = Whole(
        completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
        completion({"role": "assistant", "content": "It is **42**."}, "stop"),
    )
    answer = ask(alice_conversation, transport, "What is 6*7?")

    assert answer.state == Message.State.COMPLETE
    assert answer.content == "It is **42**."
    messages = [e.message for e in answer.answer_feed.events.order_by("seq")]
    assert "Working it out" in messages
    # The tool ran, and the model read its result in the second request.
    read = transport.requests[1]["messages"][-1]
    assert (read["role"], read["tool_call_id"]) == ("tool", "call_1") and "42" in read["content"]
    assert (
        answer.answer_feed.summary_text
        != "The model provider's reply broke off before it was finished"
    )


@pytest.mark.parametrize(
    "body", [{"choices": "not a list"}, {"id": "x"}], ids=["wrong shape", "no choices"]
)
def test_a_whole_reply_that_cannot_be_read_says_so(provider, alice_conversation, body):
    answer = ask(alice_conversation, Whole(body))

    assert answer.state == Message.State.FAILED
    assert answer.answer_feed.summary_text == "The model provider sent an unreadable reply"
