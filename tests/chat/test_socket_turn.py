from __future__ import annotations

import asyncio
import json

import pytest

from activity.models import ActivityEvent
from chat.models import Message
from chat.turns import RUNNING
from tests.conftest import connect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def receive_until_done(communicator, timeout: float = 10) -> list[str]:
    frames = []
    async with asyncio.timeout(timeout):
        while True:
            frame = await communicator.receive_from(timeout=timeout)
            frames.append(frame)
            if 'class="message assistant state-' in frame and "state-streaming" not in frame:
                return frames


async def wait_for_turns():
    while RUNNING:
        await asyncio.gather(*RUNNING, return_exceptions=True)


async def test_a_tool_turn_streams_status_lines_before_the_answer(
    alice, alice_conversation, knowledge_base
):
    socket = await connect(alice_conversation.pk, alice)
    connected, _ = await socket.connect()
    assert connected
    await socket.send_to(text_data=json.dumps({"message": "How do I negotiate my salary?"}))
    frames = await receive_until_done(socket)
    await wait_for_turns()
    await socket.disconnect()

    html = "\n".join(frames)
    print(html[:3000])
    assert "How do I negotiate my salary?" in frames[0]
    first_text = next(i for i, f in enumerate(frames) if "beforeend:#answer-" in f)
    searching = next(i for i, f in enumerate(frames) if "🔍" in f)
    assert searching < first_text
