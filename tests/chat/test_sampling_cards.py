"""What the page makes of a server's request to use the model, whatever the server wrote: its
texts escaped, and a request of any size cut, when it arrives, to a card that fits a socket's
frame (as the HTML fragment and as a program's JSON)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import mcp_types as types
import pytest
from django.template.loader import render_to_string

from activity.presenting.bounded import fits
from chat.agent.mcp.sampling import request_of
from chat.agent.sampling import MAX_TOKENS, MESSAGES_LIMIT, TOTAL_TEXT, SamplingRequest
from chat.asks.question_cards import QuestionCard
from chat.socket.render import json_frame

HOSTILE = '<img src=x onerror="window.pwned=1">'


def params(
    text: str,
    count: int = 1,
    max_tokens: int = 100,
    preferences: types.ModelPreferences | None = None,
) -> types.CreateMessageRequestParams:
    return types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
            for _ in range(count)
        ],
        max_tokens=max_tokens,
        system_prompt=text,
        model_preferences=preferences,
    )


def card(request: SamplingRequest, *, waiting: bool = True) -> QuestionCard:
    return QuestionCard(
        id=uuid.uuid4(),
        answer_id=1,
        server="bench",
        message="",
        mode="sampling",
        fields=(),
        url="",
        link="",
        deadline=datetime(2026, 1, 1, tzinfo=UTC),
        waiting=waiting,
        outcome="",
        completed=False,
        accepted=False,
        request=request,
    )


def fragment(*shown: QuestionCard) -> str:
    """The socket's HTML frame of the cards (chat.socket.wires)."""
    return render_to_string(
        "chat/_questions.html",
        {"questions": list(shown), "conversation_id": uuid.uuid4(), "oob": True},
    )


@pytest.mark.parametrize("waiting", [True, False])
def test_everything_a_server_writes_on_a_sampling_card_is_escaped(waiting):
    asked = params(
        HOSTILE,
        preferences=types.ModelPreferences(hints=[types.ModelHint(name=HOSTILE)]),
    )
    page = fragment(card(request_of("bench", "call_1", asked), waiting=waiting))

    assert "<img" not in page
    assert page.count("&lt;img src=x") >= (3 if waiting else 1)


def test_a_huge_request_is_cut_to_a_card_that_fits_a_frame():
    # Quotes escape to six bytes in HTML; control characters to six in JSON.
    for worst in ('"' * 50_000, "\x01" * 50_000):
        request = request_of("bench", "call_1", params(worst, 200, max_tokens=10**9))

        assert request.cut and request.max_tokens == MAX_TOKENS
        assert len(request.messages) == MESSAGES_LIMIT
        shown = sum(len(m.text) for m in request.messages) + len(request.system_prompt)
        assert shown == TOTAL_TEXT
        assert fits(fragment(card(request)))
        assert fits(json_frame({"type": "questions", "questions": [card(request).to_json()]}))


def test_images_and_sounds_are_placeholders_that_cannot_be_edited():
    asked = types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(
                role="user",
                content=[
                    types.TextContent(type="text", text="Describe"),
                    types.ImageContent(type="image", data="AA==", mime_type="image/png"),
                    types.AudioContent(type="audio", data="AA==", mime_type="audio/wav"),
                ],
            )
        ],
        max_tokens=10,
    )
    request = request_of("bench", "call_1", asked)

    (message,) = request.messages
    assert message.text == "Describe\n[image]\n[audio]" and not message.editable
    page = fragment(card(request))
    assert 'name="answer.message_0"' not in page and "[image]" in page
