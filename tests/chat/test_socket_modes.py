"""Each viewer's feed preferences change what their socket shows, never what is recorded."""

from __future__ import annotations

import json

import pytest

from activity.models import ActivityEvent, FeedPreferences
from tests.support import QUESTION
from tests.support.matching import found
from tests.support.sockets import (
    TAIL,
    ask,
    final_render,
    finish_turns,
    frames_until_done,
    is_text,
    live_render,
    open_socket,
    turn_frames,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def prefer(user, **overrides):
    await FeedPreferences.objects.acreate(user=user, overrides=overrides)


def text_frames(frames):
    return [f for f in frames[1:-1] if is_text(f)]


async def test_off_shows_only_the_question_then_the_final_answer(
    alice, alice_conversation, knowledge_base
):
    await prefer(alice, MODE="off")
    frames = await turn_frames(alice_conversation, alice, QUESTION)
    assert len(frames) == 2
    assert QUESTION in frames[0]
    assert "Searched the knowledge base" in frames[1] and "Salary negotiation" in frames[1]
    assert await ActivityEvent.objects.acount() == 7  # recorded in full all the same


async def test_block_sends_whole_paragraphs(alice, alice_conversation, knowledge_base):
    await prefer(alice, MODE="block")
    frames = await turn_frames(alice_conversation, alice, QUESTION)
    texts = text_frames(frames)
    # However many frames a busy machine gathers the paragraphs into: whole blocks,
    # rendered, never a tail of raw text.
    assert texts
    assert not any((tail := TAIL.search(f)) and tail.group(1) for f in texts)
    assert live_render(frames) == final_render(frames)
    assert any("🔍" in f for f in frames)


async def test_progress_shows_a_labelled_draft_and_no_streaming_text(
    alice, alice_conversation, knowledge_base
):
    await prefer(alice, MODE="progress", LABEL="Sifting...", SHOW_AFTER=60)
    frames = await turn_frames(alice_conversation, alice, QUESTION)
    assert text_frames(frames) == []
    draft = next(i for i, f in enumerate(frames) if "Sifting..." in f)
    assert "line-" in frames[draft] and 'id="line-' in frames[draft]
    # Shown at the second work event: the label, then the lines held until then.
    assert frames[draft].index("Sifting...") < frames[draft].index("Found 3 documents")
    assert "Salary negotiation" in frames[-1] and "state-complete" in frames[-1]


async def test_progress_shows_the_draft_once_show_after_has_passed(
    gate, alice, alice_conversation, knowledge_base
):
    await prefer(alice, MODE="progress", LABEL="Busy", SHOW_AFTER=0.05)
    held = gate(after=2)  # one status line so far: too little for a draft on its own
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    await held.reached.wait()
    frames = [await socket.receive_from(timeout=5)]
    while "Busy" not in frames[-1]:
        frames.append(await socket.receive_from(timeout=5))
    held.open()
    frames += await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    draft = next(i for i, f in enumerate(frames) if "Busy" in f)
    found = next(i for i, f in enumerate(frames) if "Found 3 documents" in f)
    assert draft < found
    assert "Searching the knowledge base" in frames[draft] or "Looking up" in frames[draft]


async def test_progress_never_shows_a_draft_for_a_direct_answer(
    alice, alice_conversation, knowledge_base
):
    await prefer(alice, MODE="progress", LABEL="Busy", SHOW_AFTER=0)
    frames = await turn_frames(alice_conversation, alice, "Tell me a joke")
    assert len(frames) == 2
    assert "Busy" not in "".join(frames)


async def test_raw_detail_shows_the_search_query_live_and_in_history(
    alice, alice_conversation, knowledge_base
):
    await prefer(alice, DETAIL="raw")
    frames = await turn_frames(alice_conversation, alice, QUESTION)
    assert any("query: negotiate salary" in f for f in frames[1:-1])
    assert "query: negotiate salary" in frames[-1]


async def test_a_changed_preference_applies_from_the_next_question_on_an_open_socket(
    alice, alice_conversation, knowledge_base
):
    socket = await open_socket(alice_conversation, alice)  # opened with the defaults
    await prefer(alice, MODE="off")
    await ask(socket, QUESTION)
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert len(frames) == 2


@pytest.mark.parametrize(
    "overrides",
    [{"MODE": "off"}, {"MODE": "progress", "LABEL": "Busy", "SHOW_AFTER": 60}],
    ids=["off", "progress"],
)
async def test_a_request_for_approval_shows_at_once_whatever_the_mode(
    alice, alice_conversation, overrides
):
    await prefer(alice, **overrides)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, "Email advisor@example.com: can we meet on Tuesday?")
    frames = [await socket.receive_from(timeout=5)]  # the question
    while 'name="approve"' not in frames[-1]:  # the card, with the buttons
        frames.append(await socket.receive_from(timeout=5))
    assert "waiting for your approval" in frames[-2]  # its line, just before
    call_id = found(r'name="approve" value="([^"]+)"', frames[-1])

    await socket.send_to(text_data=json.dumps({"approve": call_id}))
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    decided = next(f for f in frames if "Approved by alice" in f)
    assert 'id="line-' in decided and "hx-swap-oob" in decided
    assert "state-complete" in frames[-1]
