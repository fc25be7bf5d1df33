"""What the page and the router make of a server's question, whatever the server wrote: its
texts escaped, a link only to a web address, and a question that could be someone else's
refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import cast

import mcp_types as types
import pytest
from django.template.loader import render_to_string
from mcp.client.session import ClientRequestContext

from chat.agent.mcp import elicitation
from chat.agent.mcp.config import spec_from_mapping
from chat.agent.mcp.elicit_schema import read_form, safe_link
from chat.agent.questions import Caller, Reply
from chat.asks.question_cards import QuestionCard

HOSTILE = '<img src=x onerror="window.pwned=1">'


def card(url: str = "", **schema) -> QuestionCard:
    fields = read_form(
        {
            "type": "object",
            "properties": {
                "choice": {
                    "type": "string",
                    "title": f"Pick {HOSTILE}",
                    "description": HOSTILE,
                    "oneOf": [{"const": HOSTILE, "title": HOSTILE}],
                    "default": HOSTILE,
                },
                **schema,
            },
        }
    )
    return QuestionCard(
        id=uuid.uuid4(),
        answer_id=1,
        server=HOSTILE,
        message=HOSTILE,
        mode="url" if url else "form",
        fields=fields,
        url=url,
        link=safe_link(url),
        deadline=datetime(2026, 1, 1, tzinfo=UTC),
        waiting=True,
        outcome="",
        completed=False,
        accepted=False,
    )


def rendered(shown: QuestionCard) -> str:
    return render_to_string(
        "chat/_question.html", {"card": shown, "conversation_id": uuid.uuid4()}
    )


def test_everything_a_server_writes_on_its_card_is_escaped():
    page = rendered(card())

    assert "<img" not in page
    assert page.count("&lt;img src=x") >= 5  # server, message, title, description, option


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "https://user:secret@example.com/",
        "file:///etc/passwd",
        'https://example.com/" onmouseover="alert(1)',
    ],
)
def test_a_url_that_is_not_a_plain_web_address_is_shown_as_text_only(url):
    page = rendered(card(url))

    assert "<a " not in page
    assert "<code>" in page


def test_a_web_address_is_a_link_that_cannot_reach_back_into_the_page():
    page = rendered(card("https://payroll.example.com/confirm/1"))

    assert 'href="https://payroll.example.com/confirm/1"' in page
    assert 'rel="noopener noreferrer nofollow"' in page
    assert "<code>https://payroll.example.com/confirm/1</code>" in page


class Person:
    async def ask(self, question):
        return Reply("accept", {})

    async def completed(self, server, elicitation_id):
        return None

    async def sample(self, request):
        raise AssertionError("no request to use the model is expected here")


class Shared:
    """A connection's identity, as the router sees it."""

    spec = spec_from_mapping({"name": "crm", "url": "https://crm.example.com/mcp"})


@pytest.mark.asyncio
async def test_a_question_two_running_calls_could_have_asked_is_refused():
    connection = Shared()
    params = types.ElicitRequestFormParams(message="Who?", requested_schema={"type": "object"})
    running = elicitation._running.setdefault(connection, [])

    # The router reads no request context: its session's, which a test has none of.
    context = cast(ClientRequestContext, None)
    running.append(Caller(Person(), "call_alice", None))
    answered = await elicitation.on_elicit(connection, context, params)
    assert isinstance(answered, types.ElicitResult) and answered.action == "accept"

    running.append(Caller(Person(), "call_bob", None))
    refused = await elicitation.on_elicit(connection, context, params)
    assert isinstance(refused, types.ErrorData)
    assert refused.message == "No call of this client can be asked now"
