"""A process streaming many answers sends each one in fewer, larger frames: every frame costs
the layer, each socket's viewer and Daphne the same whatever text it carries, so under load
the frames grow instead of the process's work. The text arrives whole and in order."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from activity.models import ActivityEvent, ModelCall
from chat.models import Message
from chat.turns import registry
from chat.turns.runner import FRAMES_AT_BASE, frame_window
from tests.support import QUESTION
from tests.support.sockets import ask, finish_turns, json_until_done, open_socket


def test_a_quiet_process_keeps_the_base_window_and_a_busy_one_widens_it_to_its_cap():
    assert frame_window(0.03, 0.25, 1) == 0.03
    assert frame_window(0.03, 0.25, FRAMES_AT_BASE) == 0.03
    assert frame_window(0.03, 0.25, FRAMES_AT_BASE * 2) == pytest.approx(0.06)
    assert frame_window(0.03, 0.25, FRAMES_AT_BASE * 5) == pytest.approx(0.15)
    assert frame_window(0.03, 0.25, FRAMES_AT_BASE * 50) == 0.25
    # A frame per token stays so (the tests that want the hardest case), and a base set wider
    # than the cap is kept.
    assert frame_window(0, 0.25, FRAMES_AT_BASE * 50) == 0
    assert frame_window(0.5, 0.25, FRAMES_AT_BASE * 50) == 0.5


@dataclass
class OtherAnswer:
    """What the registry holds of an answer another turn of this process is streaming."""

    text: str = "streaming"
    pending: list[ActivityEvent] = field(default_factory=list)
    pending_calls: list[ModelCall] = field(default_factory=list)
    last_seq: int = 0


@pytest.fixture
def busy_process():
    """A hundred other answers streaming in this process while the test's turn runs."""
    others = range(-100, 0)  # no answer has such an id
    for answer_id in others:
        other = OtherAnswer()
        registry.text_started(answer_id, other, other)
    yield
    for answer_id in others:
        registry.text_finished(answer_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_busy_process_sends_an_answer_in_wider_frames_whole_and_in_order(
    settings, busy_process, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_TEXT_FRAME_SECONDS = 0.03
    settings.GLASSBOX_TEXT_FRAME_MAX_SECONDS = 0.25
    settings.GLASSBOX_DEMO_DELAY = 0.005  # a token every 5 ms: a fast model
    window = frame_window(
        settings.GLASSBOX_TEXT_FRAME_SECONDS,
        settings.GLASSBOX_TEXT_FRAME_MAX_SECONDS,
        registry.texts_streaming() + 1,  # the test's own answer among them
    )
    assert window == 0.25  # a hundred answers streaming: the cap
    socket = await open_socket(alice_conversation, alice, as_json=True)
    began = time.monotonic()
    await ask(socket, QUESTION)
    events = await json_until_done(socket, limit=30)
    took = time.monotonic() - began
    await finish_turns()
    await socket.disconnect()

    texts = [e for e in events if e["type"] == "text"]
    answer = await Message.objects.aget(role="assistant")
    assert "".join(e["content"] for e in texts) == answer.content
    assert len(answer.content) > 400  # over a hundred tokens
    # No two frames of text closer than the window, bar those sent early so a line that
    # followed them kept its place (at most one per line of the turn): however the machine
    # paced the tokens, the whole turn holds no more frames than its windows. At the base
    # window the same turn sends about eight times as many.
    lines = sum(e["type"] == "status" for e in events)
    assert len(texts) <= took / window + 1 + lines
