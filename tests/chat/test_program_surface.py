"""A program (the JSON socket, SSE) is sent a turn by its own settings: the site's
GLASSBOX_FEED_SURFACES["program"] and what its user chose for programs, the same on both
transports; a page's settings never reach it."""

from __future__ import annotations

import pytest

from activity.models import FeedPreferences
from chat.models import Message
from tests.support.programs import TRANSPORTS, program_turn

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.parametrize("transport", TRANSPORTS),
]


async def answer_text() -> str:
    answer = await Message.objects.filter(role="assistant").alatest("id")
    return answer.content


async def test_a_program_in_progress_mode_gets_a_label_its_lines_cut_and_the_answer_at_the_end(
    transport, alice, alice_conversation, knowledge_base
):
    program = {"MODE": "progress", "LABEL": "Working", "DETAIL": "explain", "LINE_WIDTH": 20}
    await FeedPreferences.objects.acreate(user=alice, overrides={"program": program})

    frames = await program_turn(transport, alice_conversation, alice)

    kinds = [frame["type"] for frame in frames]
    assert kinds[:3] == ["turn", "label", "status"]
    assert frames[1]["text"] == "Working"
    assert "tool_call" not in kinds  # explain: no arguments
    assert kinds.count("text") == 1 and kinds[-2:] == ["text", "done"]
    assert frames[-2]["content"] == await answer_text()
    statuses = [frame for frame in frames if frame["type"] == "status"]
    assert all(len(status["message"]) <= 20 for status in statuses)
    cut = [status for status in statuses if "full" in status]
    assert cut and all(s["full"].startswith(s["message"][:-1]) for s in cut)


async def test_a_program_in_off_mode_gets_only_the_answer(
    transport, alice, alice_conversation, knowledge_base
):
    await FeedPreferences.objects.acreate(user=alice, overrides={"program": {"MODE": "off"}})

    frames = await program_turn(transport, alice_conversation, alice)

    assert [frame["type"] for frame in frames] == ["turn", "text", "done"]
    assert frames[1]["content"] == await answer_text()


async def test_a_program_without_tool_progress_gets_the_text_as_it_comes_and_no_work(
    transport, alice, alice_conversation, knowledge_base
):
    overrides = {"program": {"TOOL_PROGRESS": False}}
    await FeedPreferences.objects.acreate(user=alice, overrides=overrides)

    frames = await program_turn(transport, alice_conversation, alice)

    assert {frame["type"] for frame in frames} == {"turn", "text", "done"}
    assert "".join(f["content"] for f in frames if f["type"] == "text") == await answer_text()


async def test_the_sites_program_defaults_apply_and_the_users_page_settings_do_not(
    transport, settings, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_FEED_SURFACES = {"program": {"DETAIL": "explain"}}
    # A row saved before surfaces existed: its settings are the page's.
    await FeedPreferences.objects.acreate(
        user=alice, overrides={"MODE": "off", "TOOL_PROGRESS": False}
    )

    frames = await program_turn(transport, alice_conversation, alice)

    kinds = [frame["type"] for frame in frames]
    assert "tool_call" not in kinds
    assert kinds.count("status") >= 3 and "tool_result" in kinds and "label" not in kinds
    page = (await FeedPreferences.objects.aget(user=alice)).overrides
    assert page == {"MODE": "off", "TOOL_PROGRESS": False}


async def test_a_programs_status_frames_carry_the_line_as_fields_beside_its_text(
    transport, alice, alice_conversation, knowledge_base
):
    frames = await program_turn(transport, alice_conversation, alice)

    statuses = [frame for frame in frames if frame["type"] == "status"]
    assert statuses and all(status["fields"]["icon"] == status["icon"] for status in statuses)
    for status in statuses:
        parts = status["fields"]
        assert parts["outcome"] == status["state"]
        assert status["message"].startswith(parts["action"])
        assert not parts["subject"] or status["message"].endswith(parts["subject"])


async def test_a_call_waiting_for_a_decision_reaches_a_program_that_asked_for_no_work(
    transport, settings, alice, alice_conversation
):
    settings.GLASSBOX_APPROVAL_TIMEOUT = 0.3  # nobody decides: the call times out
    await FeedPreferences.objects.acreate(
        user=alice, overrides={"program": {"MODE": "off", "RENDER": "plain"}}
    )

    frames = await program_turn(
        transport, alice_conversation, alice, "Email advisor@example.com: can we meet?"
    )

    assert [frame["type"] for frame in frames] == ["turn", "status", "decision", "text", "done"]
    assert (frames[1]["state"], frames[1]["tool"]) == ("waiting", "send_email")
    assert frames[2]["decision"] == "timeout"
