"""An MCP server's questions mid-call (elicitation), with the demo server as a real process
(over stdio, and over HTTP shared by the module's tests): the card on every socket of the
owner, the answer checked against the form and handed to the server, decline, cancel, the
deadline, a turn that ends first, and the audit."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from activity.models import ActivityEvent
from chat.agent.mcp.config import spec_from_mapping
from chat.asks import elicitations
from chat.models import Elicitation, Message
from tests.support.api import client_for
from tests.support.audit import verify
from tests.support.matching import found
from tests.support.mcp import DEMO, http_server, stdio
from tests.support.questions import (
    answer,
    answer_as_page,
    answer_without_javascript,
    json_until,
    json_until_question,
)
from tests.support.sockets import finish_turns, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

OFFER = 'surveys__draft_offer_letter {"role": "engineer"}'
PORTAL = "surveys__open_payroll_portal {}"


@pytest.fixture(scope="module")
def demo_url():
    """One demo server for the module (a process takes seconds to start): each test opens
    its own session to it."""
    with http_server(DEMO, GLASSBOX_DEMO_MCP_DELAY="0") as url:
        yield url


@pytest.fixture
def demo(settings, sessions, demo_url):
    settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "surveys", "url": demo_url})]
    return sessions


def text(events: list[dict]) -> str:
    return "".join(e["content"] for e in events if e["type"] == "text")


def lines(events: list[dict]) -> list[str]:
    return [e["message"] for e in events if e["type"] == "status"]


async def _asked(conversation, user, question: str = OFFER):
    socket = await open_socket(conversation, user, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": question}))
    events, card = await json_until_question(socket)
    return socket, events, card


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_form_question_is_a_card_and_the_answer_reaches_the_server(
    transport, demo, settings, alice, alice_conversation
):
    if transport == "stdio":
        settings.GLASSBOX_MCP_SERVERS = [stdio("surveys", DEMO, GLASSBOX_DEMO_MCP_DELAY="0")]
    socket, events, card = await _asked(alice_conversation, alice)

    assert "surveys asks: Who is the offer for engineer addressed to?" in lines(events)[-1]
    assert card["server"] == "surveys" and card["mode"] == "form" and card["deadline"]
    fields = {f["name"]: f for f in card["fields"]}
    assert fields["candidate"]["kind"] == "string" and fields["candidate"]["required"]
    assert fields["salary_eur"]["kind"] == "integer"
    assert fields["remote"]["kind"] == "boolean" and fields["remote"]["default"] is False
    assert [o["value"] for o in fields["tone"]["options"]] == ["formal", "friendly"]
    assert fields["tone"]["default"] == "formal"

    await answer(socket, card, candidate="Ada Lovelace", salary_eur=72000, tone="friendly")
    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    assert "Hi Ada Lovelace, we are pleased to offer you the engineer position" in text(events)
    assert "EUR 72,000" in text(events)
    row = await Elicitation.objects.select_related("answered_by").aget()
    assert row.state == "accept" and row.answered_by == alice and row.answered_at
    assert row.content == {"candidate": "Ada Lovelace", "salary_eur": 72000, "tone": "friendly"}
    sealed = [e.message async for e in ActivityEvent.objects.filter(kind="status").order_by("seq")]
    assert any(m.startswith("surveys asks: Who is the offer") for m in sealed)
    assert (
        "Answered by alice: Candidate: Ada Lovelace; Annual salary (EUR): 72000; Tone: friendly"
        in sealed
    )
    assert (await sync_to_async(verify)())[0] == 0


async def test_a_pages_form_sends_strings_and_they_are_read_as_the_form_says(
    demo, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer_as_page(
        socket, card, candidate="Grace Hopper", salary_eur="65000", remote="true", tone="formal"
    )
    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    assert "Dear Grace Hopper" in text(events) and "fully remote" in text(events)
    row = await Elicitation.objects.aget()
    assert row.content is not None
    assert row.content["salary_eur"] == 65000 and row.content["remote"] is True


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_reach_the_server(action, demo, alice, alice_conversation):
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer(socket, card, action)
    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    assert f"No letter drafted: the user chose {action}." in text(events)
    row = await Elicitation.objects.aget()
    assert row.state == action and row.content is None
    word = {"decline": "Declined", "cancel": "Cancelled"}[action]
    assert f"{word} by alice" in lines(events)


async def test_a_bad_answer_is_refused_clearly_saves_nothing_and_the_card_still_waits(
    demo, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer(socket, card, salary_eur="lots", tone="grumpy", extra="x")
    error = await json_until(socket, "error")

    assert "The answer does not fit the form" in error["message"]
    for problem in (
        "candidate: this field is required",
        "salary_eur: enter a number",
        "tone: choose among the options",
        "extra: the form has no such field",
    ):
        assert problem in error["message"]
    row = await Elicitation.objects.aget()
    assert row.state == "waiting" and row.content is None and row.answered_by is None

    await answer(socket, card, candidate="Ada", salary_eur=5)
    error = await json_until(socket, "error")
    assert "salary_eur: at least 10000" in error["message"]

    await answer(socket, card, candidate="Ada", salary_eur=50000)
    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()
    assert "Dear Ada" in text(events)


async def test_a_second_socket_of_the_owner_sees_the_card_and_answers_it(
    demo, alice, alice_conversation
):
    first, _events, card = await _asked(alice_conversation, alice)

    second = await open_socket(alice_conversation, alice, as_json=True)
    shown = await json_until(second, "questions")
    assert [q["id"] for q in shown["questions"]] == [card["id"]]
    await answer(second, shown["questions"][0], candidate="Ada", salary_eur=50000)

    events: list[dict] = []
    changed = await json_until(first, "questions", passed=events)
    (closed,) = changed["questions"]
    assert closed["state"] == "closed" and closed["outcome"].startswith("Answered by alice")
    events += await json_until_done(first, 20)
    await finish_turns()
    await first.disconnect()
    await second.disconnect()
    assert "Dear Ada" in text(events)

    # Answered once: a late answer from the first device is refused.
    with pytest.raises(elicitations.AlreadyAnswered):
        await elicitations.answer(
            conversation_id=alice_conversation.pk,
            question_id=(await Elicitation.objects.aget()).pk,
            user=alice,
            action="decline",
        )


async def test_nobody_answers_a_question_of_another_conversation(
    demo, alice, bob, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)
    bobs = await sync_to_async(bob.conversations.create)()

    with pytest.raises(elicitations.NoSuchQuestion):
        await elicitations.answer(
            conversation_id=bobs.pk, question_id=card["id"], user=bob, action="decline"
        )
    assert (await Elicitation.objects.aget()).state == "waiting"
    await answer(socket, card, "cancel")
    await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()


async def test_past_its_deadline_a_question_is_cancelled(
    demo, settings, alice, alice_conversation
):
    settings.GLASSBOX_ELICITATION_TIMEOUT = 0.3
    socket, _events, _card = await _asked(alice_conversation, alice)

    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    assert "No letter drafted: the user chose cancel." in text(events)
    assert "Not answered in time: the question was cancelled" in lines(events)
    row = await Elicitation.objects.aget()
    assert row.state == "expired" and row.answered_by is None
    closed = [e for e in events if e["type"] == "questions"][-1]["questions"][0]
    assert closed["state"] == "closed" and closed["outcome"].startswith("Not answered in time")


async def test_a_stopped_turn_ends_its_question_with_a_clear_line(demo, alice, alice_conversation):
    socket, events, _card = await _asked(alice_conversation, alice)
    answer_id = next(e["message_id"] for e in events if e["type"] == "turn")

    await socket.send_to(text_data=json.dumps({"stop": answer_id}))
    await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    row = await Elicitation.objects.aget()
    assert row.state == "ended" and row.reason
    with pytest.raises(elicitations.AlreadyAnswered):
        await elicitations.answer(
            conversation_id=alice_conversation.pk,
            question_id=row.pk,
            user=alice,
            action="accept",
            values={"candidate": "Ada", "salary_eur": 50000},
        )


async def test_a_question_left_by_a_dead_process_ends_when_a_page_looks(alice, alice_conversation):
    """The process that ran the turn died (its turn was recovered as interrupted): nobody
    can answer the server any more."""
    dead = await Message.objects.acreate(
        conversation=alice_conversation,
        role=Message.Role.ASSISTANT,
        state=Message.State.INTERRUPTED,
    )
    row = await Elicitation.objects.acreate(
        answer=dead,
        call_id="call_1",
        server="surveys",
        mode="form",
        message="Who?",
        requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        deadline=timezone.now() + timedelta(minutes=5),
    )

    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"resume": []}))
    shown = await json_until(socket, "questions")
    await socket.disconnect()

    (card,) = shown["questions"]
    assert card["state"] == "closed"
    assert card["outcome"] == (
        "Cancelled: The server's session ended before an answer (the turn stopped)."
    )
    await row.arefresh_from_db()
    assert row.state == "ended"


async def test_a_url_question_shows_its_link_and_waits_for_the_servers_word(
    demo, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice, PORTAL)

    assert card["mode"] == "url" and card["fields"] == []
    assert card["url"].startswith("https://payroll.example.com/confirm/")
    await answer(socket, card)
    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    assert "The payroll export was confirmed on the portal." in text(events)
    row = await Elicitation.objects.aget()
    assert row.state == "accept" and row.content is None
    closed = [e for e in events if e["type"] == "questions"][-1]["questions"][0]
    assert closed["outcome"] == "Accepted by alice"


async def test_a_field_the_server_marks_secret_is_sent_but_kept_only_as_a_hash(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    socket, _events, card = await _asked(alice_conversation, alice, "bench__sign_in {}")

    fields = {f["name"]: f for f in card["fields"]}
    assert fields["pin"]["sensitive"] and fields["token"]["sensitive"]
    assert not fields["account"]["sensitive"]
    await answer(socket, card, account="ada", pin="4242", token="t0k3n")
    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    # The server got the values in clear...
    assert "('pin', '4242')" in text(events) and "('token', 't0k3n')" in text(events)
    # ...Glassbox kept their hashes only, and the feed says "(withheld)".
    row = await Elicitation.objects.aget()
    assert row.content == {
        "account": "ada",
        "pin": "sha256:" + hashlib.sha256(b"4242").hexdigest(),
        "token": "sha256:" + hashlib.sha256(b"t0k3n").hexdigest(),
    }
    assert "Answered by alice: Account: ada; PIN: (withheld); Token: (withheld)" in lines(events)
    stored = [e.message async for e in ActivityEvent.objects.all()]
    assert not any("4242" in m or "t0k3n" in m for m in stored)


async def _ada_answered_from_the_page(client, conversation, card, socket) -> list[dict]:
    """The offer's form filled for Ada and posted without JavaScript; the turn's events to
    its end."""
    posted = await answer_without_javascript(
        client, conversation, card,
        candidate="Ada", salary_eur="50000", remote="false", tone="formal",
    )  # fmt: skip
    assert posted.status_code == 302
    events = await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()
    return events


async def test_a_reloaded_page_shows_the_waiting_card_and_answers_it_without_javascript(
    demo, client, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)
    await sync_to_async(client.force_login)(alice)
    url = f"/c/{alice_conversation.pk}/"

    page = (await sync_to_async(client.get)(url)).content.decode()
    assert f'id="question-{card["id"]}"' in page
    assert "Who is the offer for engineer addressed to?" in page
    events = await _ada_answered_from_the_page(client, alice_conversation, card, socket)
    assert "Dear Ada" in text(events)


async def test_the_inbox_counts_a_servers_question_and_answers_it_where_it_waits(
    demo, client, alice, bob, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)
    await sync_to_async(client.force_login)(bob)
    assert (
        f'id="question-{card["id"]}"'
        not in (await sync_to_async(client.get)("/inbox/")).content.decode()
    )
    await sync_to_async(client.force_login)(alice)

    inbox = (await sync_to_async(client.get)("/inbox/")).content.decode()
    assert f'id="question-{card["id"]}"' in inbox
    assert "Who is the offer for engineer addressed to?" in inbox
    listed = (await sync_to_async(client.get)("/api/inbox/")).json()
    assert [item["kind"] for item in listed] == ["question"]
    events = await _ada_answered_from_the_page(client, alice_conversation, card, socket)
    assert "Dear Ada" in text(events)
    assert (await sync_to_async(client.get)("/api/inbox/")).json() == []


async def test_a_2025_server_asks_during_the_call_and_says_when_the_page_is_done(
    settings, sessions, alice, alice_conversation
):
    with http_server(TESTBENCH_LEGACY="1") as url:
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "bench", "url": url})]
        socket, _events, card = await _asked(alice_conversation, alice, "bench__visit_portal {}")
        assert card["mode"] == "url" and card["url"] == "https://portal.example.com/go"
        await answer(socket, card)
        events = await json_until_done(socket, 20)
        await finish_turns()
        await socket.disconnect()

    assert "portal: accept" in text(events)
    row = await Elicitation.objects.aget()
    assert row.state == "accept" and row.server_elicitation_id == "visit-1"
    assert row.completed_at is not None


def _reached_at(events: list[dict]) -> float:
    """When the answer reached the server, as its `time_answer` tool says (CLOCK_MONOTONIC,
    which this process reads alike)."""
    return float(found(r"accept reached the server at (\d+\.\d+)", text(events)))


@pytest.mark.parametrize(
    ("protocol", "answered_by"),
    [("2026-07-28", "socket"), ("2025-11-25", "socket"), ("2026-07-28", "page")],
)
async def test_an_answer_given_in_the_turns_process_reaches_the_server_at_once(
    protocol, answered_by, settings, sessions, client, alice, alice_conversation
):
    """The waiting call is handed the answer, not left to find it at its next look at the
    database; from a page's form too, whose view runs on another thread's loop."""
    await sync_to_async(client.force_login)(alice)
    with contextlib.ExitStack() as servers:
        if protocol == "2025-11-25":
            url = servers.enter_context(http_server(TESTBENCH_LEGACY="1"))
            settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "bench", "url": url})]
        else:
            settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
        socket, _events, card = await _asked(alice_conversation, alice, "bench__time_answer {}")
        if answered_by == "page":
            # The person opens the page that shows the card, then answers there.
            page = await sync_to_async(client.get)(f"/c/{alice_conversation.pk}/")
            assert f'id="question-{card["id"]}"' in page.content.decode()
        given = time.monotonic()
        if answered_by == "socket":
            await answer(socket, card, word="now")
        else:
            posted = await answer_without_javascript(client, alice_conversation, card, word="now")
            assert posted.status_code == 302
        events = await json_until_done(socket, 20)
        await finish_turns()
        await socket.disconnect()

    # The hand-off takes milliseconds (bench/mcp_answer.py: p50 7 ms, p99 21 ms); the poll it
    # replaces answered a second after the question (the answer is given at once here). A
    # page's answer crosses a whole request first: 0.51 s was seen on a CI machine running
    # both suites side by side, so the bound only tells the two apart.
    assert _reached_at(events) - given < 0.8
    assert (await Elicitation.objects.aget()).content == {"word": "now"}


async def _ada_answered(conversation, user) -> Elicitation:
    socket, _events, card = await _asked(conversation, user)
    await answer(socket, card, candidate="Ada Lovelace", salary_eur=72000, tone="friendly")
    await json_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()
    return await Elicitation.objects.select_related("answer").aget()


# An answered question's row changed after the fact, and what verify_audit says of it.
QUESTION_CHANGES: dict[str, tuple[dict[str, Any], str]] = {
    "answer": (
        {"content": {"candidate": "Eve", "salary_eur": 90000, "tone": "friendly"}},
        "its answer is not the one its chain sealed",
    ),
    "outcome": ({"state": "decline"}, "its outcome is not the one its chain sealed"),
}


@pytest.mark.parametrize("change", QUESTION_CHANGES)
async def test_an_answer_changed_after_the_fact_is_found_and_named(
    change, demo, alice, alice_conversation, admin_user
):
    row = await _ada_answered(alice_conversation, alice)
    sealed = await ActivityEvent.objects.filter(arguments__question=str(row.pk)).aget()
    assert sealed.arguments is not None
    assert sealed.arguments["outcome"] == "accept" and sealed.arguments["answer_sha256"]
    assert (await sync_to_async(verify)())[0] == 0
    admin = await client_for(admin_user)
    page = f"/admin/chat/elicitation/{row.pk}/change/"
    assert "✔ intact" in (await admin.get(page)).content.decode()

    values, said = QUESTION_CHANGES[change]
    await Elicitation.objects.filter(pk=row.pk).aupdate(**values)

    status, out = await sync_to_async(verify)()
    assert status == 1
    assert f"feed {row.answer.feed_id}: BROKEN, question {row.pk}: {said}" in out
    assert f"✘ BROKEN: question {row.pk}: {said}" in (await admin.get(page)).content.decode()
    listed = (await admin.get("/admin/chat/elicitation/")).content.decode()
    assert "✘ BROKEN" in listed


async def test_a_sealed_question_deleted_is_found(demo, alice, alice_conversation):
    row = await _ada_answered(alice_conversation, alice)
    await Elicitation.objects.filter(pk=row.pk).adelete()
    status, out = await sync_to_async(verify)()
    assert status == 1 and f"question {row.pk}, which its chain sealed, is gone" in out
