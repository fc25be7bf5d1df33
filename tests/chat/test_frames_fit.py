"""Every frame a socket sends fits under Daphne's limit, whatever a server, a tool or a model
wrote: a long value is cut with a mark that says how much is missing (the record keeps it
whole), and a frame that would still be too large is a notice to reload instead. Daphne ends
a socket whose frame is larger with 1011, and a page that reconnects gets the same frame."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import AsyncClient

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.bounded import FRAME_BUDGET, SOCKET_FRAME_LIMIT, cut_long
from activity.presenting.live import LivePresenter
from activity.presenting.program_frames import ProgramFrames
from activity.recording.events import from_json
from activity.recording.receipts import fingerprint_or_blank
from chat.models import Elicitation, OutboxEmail, ToolApproval
from chat.socket import render
from chat.turns.registry import finish_all
from tests.support.cards import card_in
from tests.support.frames import assert_fits
from tests.support.questions import waiting_questions
from tests.support.sockets import everything_sent, frames_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"
HUGE_URL = "https://portal.example.com/confirm?token=" + "a" * 100_000
# HTML writes each of these as five or six bytes: the most a value can grow in a fragment.
ESCAPED = '"<>&' * 25_000
RELOAD = "Part of this conversation is too large to show here; reload the page to see it."


async def waiting_question(conversation, count: int = 1, **row) -> list[Elicitation]:
    """Questions in URL mode, with a 100 KB URL unless `row` says otherwise."""
    url_mode = {"server": "portal", "mode": "url", "message": "Confirm", "url": HUGE_URL}
    return await waiting_questions(conversation, count, **(url_mode | row))


async def test_the_budget_is_under_the_limit_daphne_is_started_with():
    makefile = (Path(__file__).parents[2] / "Makefile").read_text()
    (limits,) = re.findall(r"^DAPHNE_LIMITS := (.*)$", makefile, re.M)
    assert f"--websocket-max-frame-size {SOCKET_FRAME_LIMIT}" in limits
    assert FRAME_BUDGET <= SOCKET_FRAME_LIMIT * 3 // 4


async def test_the_mark_says_how_much_was_cut():
    assert cut_long("x" * 102_304) == "x" * 4_000 + "… (cut: 98,304 more characters)"
    assert cut_long("x" * 4_001) == "x" * 4_000 + "… (cut: 1 more character)"
    assert cut_long("x" * 4_000) == "x" * 4_000


@pytest.mark.parametrize("as_json", [False, True], ids=["page", "program"])
async def test_a_question_with_a_100_kb_url_fits_every_socket_on_every_reconnect(
    alice, alice_conversation, as_json
):
    (row,) = await waiting_question(alice_conversation)
    for _reconnect in range(2):
        socket = await open_socket(alice_conversation, alice, as_json=as_json)
        await socket.send_to(text_data=json.dumps({"resume": []}))
        frames = await everything_sent(socket)
        await socket.disconnect()

        assert_fits(frames)
        *_, shown = [frame for frame in frames if "portal.example.com" in frame]
        assert "… (cut: 96,041 more characters)" in shown
        if as_json:
            (card,) = json.loads(shown)["questions"]
            assert card["state"] == "waiting" and card["url"] == cut_long(HUGE_URL)
        else:
            # A URL that had to be cut leads nowhere it said: shown as text, no link.
            assert "Open the page" not in shown and 'href="https://portal' not in shown
    await row.arefresh_from_db()
    assert row.url == HUGE_URL and row.state == "waiting"  # the record keeps it whole


@pytest.mark.parametrize("as_json", [False, True], ids=["page", "program"])
async def test_too_many_large_questions_at_once_are_a_notice_to_reload_not_a_closed_socket(
    alice, alice_conversation, as_json
):
    await waiting_question(alice_conversation, 12, message=ESCAPED, url=ESCAPED)
    socket = await open_socket(alice_conversation, alice, as_json=as_json)
    await socket.send_to(text_data=json.dumps({"resume": []}))
    frames = await everything_sent(socket)

    assert_fits(frames)
    shown = json.loads(frames[-1])["message"] if as_json else frames[-1]
    assert RELOAD in shown
    # Still open: it answers the next request.
    await socket.send_to(text_data="{")
    assert "could not be read" in await socket.receive_from(timeout=5)
    await socket.disconnect()


async def test_a_huge_argument_on_an_approval_card_is_cut_not_editable_and_kept_as_asked(
    alice, alice_conversation
):
    client = AsyncClient()
    await client.aforce_login(alice)
    await client.post(f"/c/{alice_conversation.pk}/act/", {"message": EMAIL})
    await finish_all()
    approval = await ToolApproval.objects.aget(decision="")
    approval.arguments = approval.arguments | {"body": ESCAPED}
    approval.fingerprint = fingerprint_or_blank(approval.arguments)
    await approval.asave()

    socket = await open_socket(alice_conversation, alice)
    joined = await everything_sent(socket)
    assert_fits(joined)
    (card_frame,) = [frame for frame in joined if 'class="approval-card' in frame]
    assert "… (cut: 96,000 more characters)" in card_frame
    card = card_in(card_frame, approval.answer_id)
    body = card.find("textarea", id=f"edit-{approval.answer_id}-3")
    assert body is not None and "readonly" in body.attrs

    # An edit of the other arguments keeps the long one as it was asked (one the tool
    # takes: at most 5,000 characters, more than a card shows).
    kept = ESCAPED[:4_900]
    approval.arguments = approval.arguments | {"body": kept}
    approval.fingerprint = fingerprint_or_blank(approval.arguments)
    await approval.asave()
    await socket.send_to(
        text_data=json.dumps(
            {
                "approve": approval.call_id,
                "fingerprint": approval.fingerprint,
                "argument.to": "dean@example.com",
                "argument.subject": "Tuesday",
            }
        )
    )
    frames = await frames_until_done(socket, 20)
    await finish_all()
    await socket.disconnect()
    assert_fits(frames)
    sent = await OutboxEmail.objects.aget()
    assert (sent.to, sent.body) == ("dean@example.com", kept)


async def test_a_long_status_line_and_long_text_fit_as_lines_and_as_program_frames():
    status = {
        "type": "status",
        "seq": 1,
        "icon": "🧩",
        "message": "Step " + ESCAPED,
        "state": "in_progress",
        "call_id": "call_1",
    }
    call = {"type": "tool_call", "seq": 2, "tool": "t", "call_id": "c", "arguments": {
        "a": ESCAPED, "b": [ESCAPED], ESCAPED: 1}}  # fmt: skip
    text = {"type": "text", "content": "Ω\x01" * 60_000}
    presenter = LivePresenter(FeedPrefs(), 7)
    page = [render.live_ops(7, presenter.on_event(from_json(status)))]
    program = ProgramFrames(FeedPrefs(line_width=0, mode="partial"), 7)
    frames = [
        json.dumps(f, ensure_ascii=False)
        for e in (status, call, text)
        for f in program.frames(from_json(e))
    ]

    assert_fits(page + frames)
    assert "(cut: 96,005 more characters)" in page[0]  # the line's title: the whole text, cut
    pieces = [json.loads(f)["content"] for f in frames if json.loads(f)["type"] == "text"]
    assert len(pieces) > 1 and "".join(pieces) == text["content"]  # the answer is never cut


async def test_the_turn_started_fragment_of_the_longest_question_fits(
    settings, alice, alice_conversation
):
    question = '"<>&' * (settings.GLASSBOX_MAX_MESSAGE_CHARS // 4)
    socket = await open_socket(alice_conversation, alice)
    await socket.send_to(text_data=json.dumps({"message": question}))
    frames = await frames_until_done(socket, 20)
    await finish_all()
    await socket.disconnect()
    assert_fits(frames)
    assert "&quot;&lt;&gt;&amp;" * 100 in frames[0]  # shown, not a notice to reload
