"""What a screen reader hears of a turn: the feed lines as they come, one announcement when
the answer is done, and never the answer chunk by chunk."""

from __future__ import annotations

import re

import pytest

from tests.support import QUESTION
from tests.support.sockets import turn_frames

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.asyncio
async def test_only_the_lines_and_one_announcement_are_live(
    alice, alice_conversation, knowledge_base
):
    frames = await turn_frames(alice_conversation, alice, QUESTION)

    started = frames[0]
    assert 'aria-live="polite"' in started.split('class="lines"')[1].split(">")[0]
    assert re.search(r'class="answer streaming" aria-busy="true"', started)
    live = frames[1:-1]
    assert not any("announcer" in frame for frame in live)
    final = frames[-1]
    assert final.count('id="announcer"') == 1 and "The answer is ready." in final
    assert "aria-busy" not in final
    # The done glyph is read as a word, not as "check mark".
    assert re.search(
        r'<span class="state"><span aria-hidden="true">✓</span>'
        r'<span class="visually-hidden">done</span></span>',
        final,
    )


def test_the_page_is_not_one_big_live_region(alice_client, alice_conversation):
    page = alice_client.get(f"/c/{alice_conversation.pk}/").content.decode()
    assert '<div id="messages">' in page
    assert '<div id="announcer" class="visually-hidden" aria-live="polite"></div>' in page
