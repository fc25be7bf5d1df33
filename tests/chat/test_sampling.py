"""An MCP server's request to use the model (sampling/createMessage), with the test bench as a
real process whose tool samples (the 2026-07-28 way over stdio, during the call over a 2025
HTTP session): the card on every socket of the owner and no one else's, approve, approve
edited, deny, the deadline, a server not declared with sampling, the day's budget spent, and
the model call recorded with its usage and sealed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from activity.models import ActivityEvent, ActivityFeed, ModelCall
from chat.agent.mcp.config import spec_from_mapping
from chat.agent.sampling import FIRST_ROUND
from chat.asks import elicitations
from chat.asks.waiting import QuestionWait
from chat.models import Conversation, Elicitation
from tests.support.audit import verify
from tests.support.mcp import BENCH, http_server, stdio
from tests.support.questions import (
    answer,
    answer_as_page,
    answer_without_javascript,
    json_until,
    json_until_question,
)
from tests.support.revocation import browser_of, closed_with
from tests.support.sockets import connect, finish_turns, json_until_done, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

POEM = 'bench__write_poem {"topic": "rain"}'


@pytest.fixture
def bench(settings, sessions):
    settings.GLASSBOX_MCP_SERVERS = [replace(stdio("bench"), sampling=True)]
    return sessions


@pytest.fixture(scope="module")
def legacy_url():
    """The bench speaking only the 2025 protocol, whose tool asks during the call and
    finishes as it decides when refused."""
    with http_server(BENCH, TESTBENCH_LEGACY="1") as url:
        yield url


def text(events: list[dict]) -> str:
    return "".join(e["content"] for e in events if e["type"] == "text")


def lines(events: list[dict]) -> list[str]:
    return [e["message"] for e in events if e["type"] == "status"]


def results(events: list[dict]) -> str:
    """The calls' results, and the answer, where the demo model repeats a result whole."""
    shown = json.dumps([e for e in events if e["type"] == "tool_result"], ensure_ascii=False)
    return shown + text(events)


async def _asked(conversation, user) -> tuple[WebsocketCommunicator, list[dict], dict]:
    socket = await open_socket(conversation, user, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": POEM}))
    events, card = await json_until_question(socket)
    return socket, events, card


async def _ended(socket, events: list[dict] | None = None) -> list[dict]:
    events = (events or []) + await json_until_done(socket, 30)
    await finish_turns()
    await socket.disconnect()
    return events


async def test_an_approved_request_runs_the_model_and_its_answer_reaches_the_server(
    bench, alice, alice_conversation
):
    socket, events, card = await _asked(alice_conversation, alice)

    assert lines(events)[-1] == "bench asks to use the model — waiting for your approval"
    assert card["mode"] == "sampling" and card["server"] == "bench" and card["deadline"]
    asked = card["sampling"]
    assert asked["max_tokens"] == 60
    # The server's words as it sent them: a page escapes them (tests/e2e).
    assert asked["system_prompt"] == 'You are a poet. <img src=x onerror="window.pwned=1">'
    assert asked["messages"] == [
        {"role": "user", "text": "[image]", "editable": False},
        {"role": "user", "text": "Write a haiku about rain", "editable": True},
    ]
    assert asked["model_hints"] == ["claude-haiku"] and asked["priorities"] == {
        "intelligence": 0.8
    }

    await answer(socket, card)
    events = await _ended(socket)

    assert "Approved by alice" in lines(events)
    assert any(line.startswith("The model wrote") for line in lines(events))
    # The demo model answers the last message it was sent.
    assert "poem by glassbox-demo (endTurn): " in results(events)
    assert "Write a haiku about rain" in results(events)
    row = await Elicitation.objects.aget()
    assert row.state == "accept" and row.content == row.requested_schema


async def test_the_model_call_is_the_turns_with_its_usage_and_sealed(
    bench, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)
    await answer(socket, card)
    await _ended(socket)

    calls = [c async for c in ModelCall.objects.order_by("round")]
    assert [c.round for c in calls] == [0, 1, FIRST_ROUND]
    sampled = calls[2]
    assert sampled.model == "glassbox-demo"
    assert sampled.prompt_tokens and sampled.completion_tokens
    feed = await ActivityFeed.objects.aget()
    spent = sum((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in calls)
    assert feed.total_tokens == spent
    assert (await sync_to_async(verify)())[0] == 0


async def test_an_edited_request_is_sent_as_edited_from_the_cards_form(
    bench, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer_as_page(
        socket, card, message_1="Write a haiku about snow", system_prompt="Be brief.",
        max_tokens="30",
    )  # fmt: skip
    events = await _ended(socket)

    assert "Approved with edits by alice" in lines(events)
    assert "Write a haiku about snow" in results(events)
    assert "rain" not in results(events)
    row = await Elicitation.objects.aget()
    assert row.content is not None
    assert row.content["system_prompt"] == "Be brief." and row.content["max_tokens"] == 30
    assert row.requested_schema["max_tokens"] == 60  # what the server asked stays on record


async def test_edits_out_of_bounds_are_refused_clearly_and_the_card_still_waits(
    bench, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer(socket, card, max_tokens=100_000, message_0="not an image", model="gpt-5")
    error = await json_until(socket, "error")

    for problem in (
        "max_tokens: between 1 and 4096",
        "message_0: the request has no such text message",
        "model: the request has no such field",
    ):
        assert problem in error["message"]
    await answer(socket, card, system_prompt="x" * 2001)
    error = await json_until(socket, "error")
    assert "system_prompt: at most 2000 characters" in error["message"]
    row = await Elicitation.objects.aget()
    assert row.state == "waiting" and row.content is None

    await answer(socket, card, "decline")
    await _ended(socket)


async def test_a_request_that_offers_the_model_tools_is_refused_without_a_card(
    bench, alice, alice_conversation
):
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": 'bench__write_poem {"topic": "tools"}'}))
    events = await _ended(socket)

    # Its model could call the server's tools outside the turn's approvals: refused at once.
    assert "Tools are not supported" in results(events)
    assert not [e for e in events if e["type"] == "questions"]
    assert not await Elicitation.objects.aexists()
    assert not await ModelCall.objects.filter(round__gte=FIRST_ROUND).aexists()


async def test_a_denied_request_is_refused_and_the_model_is_not_asked(
    bench, alice, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer(socket, card, "decline")
    events = await _ended(socket)

    assert "Denied by alice" in lines(events)
    # On 2026-07-28 the refusal ends the call (the server is not called again).
    assert "The user denied the request" in results(events)
    assert not await ModelCall.objects.filter(round__gte=FIRST_ROUND).aexists()
    row = await Elicitation.objects.aget()
    assert row.state == "decline" and row.content is None


async def test_a_2025_server_hears_the_refusal_and_its_tool_finishes_as_it_decides(
    settings, sessions, legacy_url, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [
        spec_from_mapping({"name": "bench", "url": legacy_url, "sampling": True})
    ]
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer(socket, card, "decline")
    events = await _ended(socket)

    assert "no poem: The user denied the request" in results(events)


async def test_a_2025_server_gets_the_approved_answer_during_its_call(
    settings, sessions, legacy_url, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [
        spec_from_mapping({"name": "bench", "url": legacy_url, "sampling": True})
    ]
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer(socket, card)
    events = await _ended(socket)

    assert "poem by glassbox-demo (endTurn): " in results(events)


async def test_past_its_deadline_a_request_is_refused(bench, settings, alice, alice_conversation):
    settings.GLASSBOX_ELICITATION_TIMEOUT = 0.3
    socket, events, _card = await _asked(alice_conversation, alice)

    events = await _ended(socket, events)

    assert "Not approved in time: the request was refused" in lines(events)
    assert "The user did not approve the request in time" in results(events)
    row = await Elicitation.objects.aget()
    assert row.state == "expired" and row.answered_by is None
    assert not await ModelCall.objects.filter(round__gte=FIRST_ROUND).aexists()


async def test_a_server_not_declared_with_sampling_gets_the_protocols_error(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": POEM}))
    events = await _ended(socket)

    assert "Sampling not supported" in results(events)
    assert not any(e["type"] == "questions" for e in events)
    assert not await Elicitation.objects.aexists()
    assert not await ModelCall.objects.filter(round__gte=FIRST_ROUND).aexists()


async def test_with_the_days_tokens_spent_the_request_is_refused_after_approval(
    bench, settings, alice, alice_conversation
):
    # The turn is admitted with none used; its own first request spends the budget.
    settings.GLASSBOX_DAILY_TOKENS = 1
    socket, _events, card = await _asked(alice_conversation, alice)

    await answer(socket, card)
    events = await _ended(socket)

    assert "The model was not asked: your tokens for today are used up" in lines(events)
    assert "The user's token budget for today is used up" in results(events)
    assert not await ModelCall.objects.filter(round__gte=FIRST_ROUND).aexists()


async def test_every_socket_of_the_owner_sees_the_card_and_no_one_elses_does(
    bench, alice, bob, alice_conversation
):
    bobs = await open_socket(await Conversation.objects.acreate(owner=bob), bob, as_json=True)
    first, _events, card = await _asked(alice_conversation, alice)

    second = await open_socket(alice_conversation, alice, as_json=True)
    shown = await json_until(second, "questions")
    assert [q["id"] for q in shown["questions"]] == [card["id"]]
    assert shown["questions"][0]["sampling"]["max_tokens"] == 60
    waits = sync_to_async(lambda user: list(QuestionWait.waiting_for(user)))
    assert [w.pk for w in await waits(alice)] == [
        await Elicitation.objects.values_list("pk", flat=True).aget()
    ]
    assert await waits(bob) == []
    assert await bobs.receive_nothing(0.2)

    await answer(second, shown["questions"][0])
    events = await _ended(first)
    await second.disconnect()
    assert "poem by glassbox-demo" in results(events)
    assert await bobs.receive_nothing(0.1)
    await bobs.disconnect()
    stored = [e.message async for e in ActivityEvent.objects.filter(kind="status")]
    assert "Approved by alice" in stored


async def test_a_socket_whose_login_is_revoked_closes_and_the_request_waits_for_its_owner(
    bench, alice, alice_conversation
):
    _browser, cookie = await browser_of(alice)
    socket = await connect(alice_conversation.pk, as_json=True, headers=[(b"cookie", cookie)])
    assert (await socket.connect())[0]
    await socket.send_to(text_data=json.dumps({"message": POEM}))
    await json_until_question(socket)

    alice.set_password("a new password")
    await alice.asave()

    # As with a tool's approval: the socket that lost its right closes, within a second...
    assert await closed_with(socket, 4401)
    row = await Elicitation.objects.aget()
    assert row.state == Elicitation.State.WAITING
    # ...and the request waits for its owner, who decides it once logged in again.
    again = await open_socket(alice_conversation, alice, as_json=True)
    shown = await json_until(again, "questions")
    await answer(again, shown["questions"][0])
    await _ended(again)
    stored = [e.result_content async for e in ActivityEvent.objects.filter(kind="tool_result")]
    assert any("poem by glassbox-demo" in content for content in stored)


async def test_the_inbox_lists_the_request_and_its_page_form_approves_it_without_javascript(
    bench, client, alice, bob, alice_conversation
):
    socket, _events, card = await _asked(alice_conversation, alice)
    await sync_to_async(client.force_login)(bob)
    inbox = (await sync_to_async(client.get)("/inbox/")).content.decode()
    assert f'id="question-{card["id"]}"' not in inbox
    await sync_to_async(client.force_login)(alice)

    inbox = (await sync_to_async(client.get)("/inbox/")).content.decode()
    assert f'id="question-{card["id"]}"' in inbox
    assert "The bench server asks to use the model" in inbox
    # The server's markup is shown as text.
    assert "You are a poet. &lt;img src=x" in inbox and "<img src=x" not in inbox
    posted = await answer_without_javascript(
        client, alice_conversation, card, message_1="Write a haiku about fog"
    )
    assert posted.status_code == 302
    events = await _ended(socket)

    assert "Approved with edits by alice" in lines(events)
    assert "Write a haiku about fog" in results(events)
    assert (await sync_to_async(client.get)("/api/inbox/")).json() == []
    # The turn's feed, as history keeps it, holds the decision.
    feed = await ActivityFeed.objects.aget()
    kept = (await sync_to_async(client.get)(f"/api/feeds/{feed.pk}/")).content.decode()
    assert "Approved with edits by alice" in kept


async def test_a_stopped_turn_ends_its_request_and_a_late_approval_is_refused(
    bench, alice, alice_conversation
):
    socket, events, _card = await _asked(alice_conversation, alice)
    answer_id = next(e["message_id"] for e in events if e["type"] == "turn")

    await socket.send_to(text_data=json.dumps({"stop": answer_id}))
    events = await _ended(socket)

    assert events[-1]["state"] == "stopped"
    row = await Elicitation.objects.aget()
    assert row.state == "ended" and row.reason
    with pytest.raises(elicitations.AlreadyAnswered):
        await elicitations.answer(
            conversation_id=alice_conversation.pk,
            question_id=row.pk,
            user=alice,
            action="accept",
        )
    assert not await ModelCall.objects.filter(round__gte=FIRST_ROUND).aexists()
