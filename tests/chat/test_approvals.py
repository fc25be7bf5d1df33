"""Tools that ask first: the pause, the decision by socket or REST, what the model is told,
timeouts, Stop, and the audit of every decision."""

from __future__ import annotations

import io
import json
import time

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.management import call_command

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.receipts import fingerprint
from chat.asks import approvals
from chat.models import Message, OutboxEmail, ToolApproval
from chat.turns import resuming
from tests.support.api import client_for
from tests.support.responses import streamed
from tests.support.sockets import (
    ask,
    finish_turns,
    json_until_done,
    json_until_waiting,
    open_socket,
    paused_turn,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


def text(events) -> str:
    return "".join(e["content"] for e in events if e["type"] == "text")


async def test_a_call_that_asks_first_pauses_the_turn_holding_no_task(alice, alice_conversation):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)

    waiting = events[-1]
    assert waiting["icon"] == "⏸" and waiting["tool"] == "send_email"
    assert waiting["message"] == (
        "Sending an email to advisor@example.com — waiting for your approval"
    )
    (call,) = [e for e in events if e["type"] == "tool_call"]
    assert call["arguments"]["to"] == "advisor@example.com"
    answer = await Message.objects.select_related("feed").aget(role="assistant")
    assert answer.state == Message.State.WAITING and answer.answer_feed.state == "waiting"
    approval = await ToolApproval.objects.aget()
    assert (approval.call_id, approval.tool, approval.decision) == (
        waiting["call_id"], "send_email", ""
    )  # fmt: skip
    from chat.turns import registry

    assert not registry.runs_here(answer.pk)  # nothing waits in memory
    assert not await OutboxEmail.objects.aexists()
    await socket.disconnect()


async def test_approved_the_tool_runs_and_the_turn_goes_on(alice, alice_conversation):
    before_asking = time.monotonic()
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    call_id = events[-1]["call_id"]

    await socket.send_to(text_data=json.dumps({"approve": call_id}))
    rest = await json_until_done(socket)
    held_ms = (time.monotonic() - before_asking) * 1000
    await finish_turns()
    await socket.disconnect()

    decision = rest[0]
    assert decision["type"] == "decision" and decision["decision"] == "approve"
    assert (decision["call_id"], decision["by"]) == (call_id, "alice")
    # The wait the audit shows is the one stored, from the question to the decision, and no
    # longer than this test held the turn.
    approval = await ToolApproval.objects.aget(call_id=call_id)
    assert approval.decided_at is not None and approval.asked_at is not None
    stored = (approval.decided_at - approval.asked_at).total_seconds() * 1000
    assert decision["waited_ms"] == int(stored)
    assert 0 <= decision["waited_ms"] <= held_ms
    (result,) = [e for e in rest if e["type"] == "tool_result"]
    assert result["ok"] is True
    assert "the email to advisor@example.com is in the outbox" in text(rest)
    assert rest[-1]["state"] == "complete"
    mail = await OutboxEmail.objects.aget()
    assert (mail.to, mail.body) == ("advisor@example.com", EMAIL)
    # One call, one tool_call event: its arguments were recorded when it asked.
    kinds = [e.kind async for e in ActivityEvent.objects.filter(call_id=call_id).order_by("seq")]
    assert kinds == [
        "status", "status", "tool_call", "status", "decision", "tool_result", "status"
    ]  # fmt: skip
    # The decision, sealed with its claim, sits in the feed's chain like any other event.
    await sync_to_async(call_command)("verify_audit", stdout=io.StringIO())


async def test_denied_the_model_is_told_why_and_answers_without_it(alice, alice_conversation):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    call_id = events[-1]["call_id"]

    await socket.send_to(text_data=json.dumps({"deny": call_id, "reason": "not before Monday"}))
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert rest[0]["decision"] == "deny" and rest[0]["reason"] == "not before Monday"
    assert "I did not send the email (The user denied this call: not before Monday)" in text(rest)
    assert [(e["message"], e["state"]) for e in rest if e["type"] == "status"] == [
        ("Answering without it", "in_progress"),
        ("Answering without it", "done"),
        ("Writing the answer…", "in_progress"),
        ("Done", "done"),
    ]
    assert rest[-1]["state"] == "complete"
    assert not await OutboxEmail.objects.aexists()


async def test_the_first_decision_wins(alice, alice_conversation):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    call_id = events[-1]["call_id"]
    other = await open_socket(alice_conversation, alice, as_json=True)

    await socket.send_to(text_data=json.dumps({"approve": call_id}))
    await other.send_to(text_data=json.dumps({"deny": call_id}))
    seen = []
    while True:
        event = json.loads(await other.receive_from(timeout=10))
        seen.append(event)
        if event["type"] == "done":
            break
    await finish_turns()
    for each in (socket, other):
        await each.disconnect()

    refusals = [e for e in seen if e["type"] == "error"]
    assert [e["message"] for e in refusals] == ["That tool call was already decided."]
    decisions = [e["decision"] for e in seen if e["type"] == "decision"]
    assert decisions == ["approve"]
    assert await OutboxEmail.objects.acount() == 1


async def test_no_decision_in_time_is_a_denial_as_timed_out(alice, alice_conversation, settings):
    settings.GLASSBOX_APPROVAL_TIMEOUT = 0.3
    socket, _ = await paused_turn(alice_conversation, alice, EMAIL)
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert rest[0]["type"] == "decision" and rest[0]["decision"] == "timeout"
    assert rest[0]["by"] == ""
    assert "Nobody approved this call in time" in text(rest)
    assert rest[-1]["state"] == "complete"
    approval = await ToolApproval.objects.aget()
    assert approval.decision == "timeout"
    assert not await OutboxEmail.objects.aexists()


async def test_stop_while_waiting_ends_the_turn_as_stopped(alice, alice_conversation):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    answer_id = next(e["message_id"] for e in events if e["type"] == "turn")

    await socket.send_to(text_data=json.dumps({"stop": answer_id}))
    rest = await json_until_done(socket)
    await socket.disconnect()

    stopped = [(e["icon"], e["message"], e["state"]) for e in rest if e["type"] == "status"]
    assert stopped == [("⏹", "Stopped", "done")]  # an end the owner chose, not a failure
    assert rest[-1]["state"] == "stopped"
    assert rest[-1]["summary"] == {"icon": "⏹", "text": "Stopped"}
    answer = await Message.objects.select_related("feed").aget(pk=answer_id)
    assert (answer.state, answer.answer_feed.state) == ("stopped", "stopped")
    assert answer.content == text(events)  # what it wrote before it paused is kept
    assert (await ToolApproval.objects.aget()).decision == "stopped"
    with pytest.raises(approvals.AlreadyDecided):
        await resuming.decide(
            conversation_id=alice_conversation.pk, call_id=events[-1]["call_id"], user=alice,
            approve=True,
        )  # fmt: skip


async def test_a_waiting_turn_blocks_a_new_question_with_a_clear_reason(alice, alice_conversation):
    socket, _ = await paused_turn(alice_conversation, alice, EMAIL)
    await ask(socket, "Something else?")
    refusal = json.loads(await socket.receive_from(timeout=10))
    await socket.disconnect()

    assert refusal == {
        "type": "error",
        "message": "A tool call is waiting for your approval: approve or deny it first.",
    }


async def test_programs_decide_over_rest_and_only_the_owner_may(
    alice, bob, alice_conversation, admin_user
):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    call_id = events[-1]["call_id"]
    url = f"/api/conversations/{alice_conversation.pk}/approvals/{call_id}/"

    for outsider in (bob, admin_user):
        refused = await (await client_for(outsider)).post(
            url, {"decision": "approve"}, content_type="application/json"
        )
        assert refused.status_code == 404
    from django.test import AsyncClient

    anonymous = await AsyncClient().post(
        url, {"decision": "approve"}, content_type="application/json"
    )
    assert anonymous.status_code in (401, 403)
    owner = await client_for(alice)
    bad = await owner.post(url, {"decision": "maybe"}, content_type="application/json")
    assert bad.status_code == 400 and "decision" in bad.json()
    unknown = await owner.post(
        url.replace(call_id, "call_nope"), {"decision": "approve"}, content_type="application/json"
    )
    assert unknown.status_code == 404
    assert not await OutboxEmail.objects.aexists()

    denied = await owner.post(
        url, {"decision": "deny", "reason": "wrong person"}, content_type="application/json"
    )
    assert denied.status_code == 200
    stored = await ActivityEvent.objects.aget(kind="decision")
    approval = await ToolApproval.objects.aget(call_id=call_id)
    assert approval.decided_at is not None and approval.asked_at is not None
    # The wait the program is told is the stored one, from the question to the decision.
    waited_ms = int((approval.decided_at - approval.asked_at).total_seconds() * 1000)
    assert denied.json() == {
        "type": "decision", "seq": stored.seq, "call_id": call_id, "tool": "send_email",
        "decision": "deny", "by": "alice", "reason": "wrong person", "waited_ms": waited_ms,
        "fingerprint": fingerprint(events[-2]["arguments"]),
    }  # fmt: skip
    assert stored.duration_ms == waited_ms  # and the audit keeps the same
    assert stored.seq == events[-1]["seq"] + 1  # right after the ⏸ line
    again = await owner.post(url, {"decision": "approve"}, content_type="application/json")
    assert again.status_code == 409
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert rest[-1]["state"] == "complete"


async def test_every_decision_is_in_the_feed_history_and_the_api(alice, alice_conversation):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    await socket.send_to(text_data=json.dumps({"deny": events[-1]["call_id"], "reason": "no"}))
    await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    feed = await ActivityFeed.objects.aget()
    detail = await (await client_for(alice)).get(f"/api/feeds/{feed.pk}/")
    (decision,) = [e for e in detail.json()["events"] if e["type"] == "decision"]
    assert (decision["decision"], decision["by"], decision["reason"]) == ("deny", "alice", "no")
    page = await sync_to_async(_page)(alice, alice_conversation)
    assert "🚫" in page and "Denied by alice: no" in page
    assert 'name="approve"' not in page  # no buttons once decided


def _page(user, conversation) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get(f"/c/{conversation.pk}/").content.decode()


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", password="root-password")


async def test_the_conversation_list_shows_a_turn_waiting(alice, alice_conversation):
    socket, _ = await paused_turn(alice_conversation, alice, EMAIL)
    await socket.disconnect()

    def listing() -> str:
        from django.test import Client

        client = Client()
        client.force_login(alice)
        return client.get("/").content.decode()

    assert "⏸ waiting for your approval" in await sync_to_async(listing)()


async def test_an_mcp_tool_that_destroys_asks_first_unless_settings_say_otherwise(settings):
    from chat.agent.mcp.connections import pool
    from chat.agent.mcp.tools import tools_of
    from chat.turns.policy import agent_policy
    from tests.support.mcp import stdio

    try:
        connections = await pool().connect([stdio("bench")])
        tools = {tool.name: tool for tool in tools_of(connections)}
        assert agent_policy().asks_first(tools["bench__delete_record"])
        assert not agent_policy().asks_first(tools["bench__count"])
        settings.GLASSBOX_APPROVAL = {"bench__delete_record": False, "bench__count": True}
        assert not agent_policy().asks_first(tools["bench__delete_record"])
        assert agent_policy().asks_first(tools["bench__count"])
    finally:
        await pool().close()


async def test_the_admin_chooses_which_mcp_tools_ask():
    from chat.agent.mcp.config import spec_from_mapping

    spec = spec_from_mapping({"name": "crm", "url": "http://x.example/mcp", "approval": []})
    assert spec.approval == frozenset()  # an explicit list: none asks, whatever they say
    assert spec_from_mapping({"name": "crm", "url": "http://x.example/mcp"}).approval is None


async def test_admins_find_denied_and_timed_out_calls_and_exports_keep_decisions(
    alice, alice_conversation, admin_user, settings
):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    await socket.send_to(text_data=json.dumps({"deny": events[-1]["call_id"], "reason": "no"}))
    await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    feed = await ActivityFeed.objects.aget()

    def admin_pages() -> tuple[str, str, str, str]:
        from django.test import Client

        client = Client()
        client.force_login(admin_user)
        get = lambda url: client.get(url).content.decode()  # noqa: E731
        return (
            get("/admin/activity/activityfeed/?decision=deny"),
            get("/admin/activity/activityfeed/?decision=timeout"),
            get("/admin/chat/toolapproval/"),
            get(f"/admin/activity/activityfeed/{feed.pk}/change/"),
        )

    denied, timed_out, approvals_page, feed_page = await sync_to_async(admin_pages)()
    assert f"/admin/activity/activityfeed/{feed.pk}/change/" in denied
    assert f"/admin/activity/activityfeed/{feed.pk}/change/" not in timed_out
    assert (
        "send_email" in approvals_page and '<td class="field-decision">Deny</td>' in approvals_page
    )
    assert "decision" in feed_page and ">alice<" in feed_page
    client = await client_for(alice)
    response = await client.get("/api/feeds/export/?format=csv")
    body = b"".join(await streamed(response)).decode()
    import csv
    import io

    rows = [r for r in csv.DictReader(io.StringIO(body)) if r["type"] == "decision"]
    assert [(r["decision"], r["by"], r["reason"]) for r in rows] == [("deny", "alice", "no")]


async def test_no_one_but_the_owner_reaches_the_buttons_over_the_socket(
    alice, bob, alice_conversation, admin_user
):
    from tests.support.sockets import connect

    socket, _ = await paused_turn(alice_conversation, alice, EMAIL)
    for outsider in (bob, admin_user):
        other = await connect(alice_conversation.pk, outsider, as_json=True)
        connected, _ = await other.connect()
        assert connected
        closed = await other.receive_output(timeout=5)
        assert closed["type"] == "websocket.close" and closed["code"] == 4404
    assert (await ToolApproval.objects.aget()).decision == ""
    await socket.disconnect()


async def test_a_regenerated_answer_asks_again_and_is_decided_over_the_socket_and_rest(
    alice, alice_conversation
):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    call_id = events[-1]["call_id"]
    await socket.send_to(text_data=json.dumps({"approve": call_id}))
    first = await json_until_done(socket)
    await finish_turns()
    assert first[-1]["state"] == "complete"

    answers = [first[-1]["message_id"]]
    for by in ("socket", "rest"):
        await socket.send_to(text_data=json.dumps({"regenerate": answers[-1]}))
        asked = await json_until_waiting(socket)
        answers.append(asked[0]["message_id"])
        # The new answer makes the same call again, under the same id as the decided one.
        assert asked[-1]["call_id"] == call_id
        if by == "socket":
            await socket.send_to(text_data=json.dumps({"approve": call_id}))
        else:
            decided = await (await client_for(alice)).post(
                f"/api/conversations/{alice_conversation.pk}/approvals/{call_id}/",
                {"decision": "approve"},
                content_type="application/json",
            )
            assert decided.status_code == 200 and decided.json()["decision"] == "approve"
        rest = await json_until_done(socket)
        await finish_turns()
        assert [e["type"] for e in rest if e["type"] in ("decision", "error")] == ["decision"]
        assert rest[0]["decision"] == "approve" and rest[-1]["state"] == "complete"
    await socket.disconnect()

    decisions = [
        (str(approval.answer_id), approval.decision)
        async for approval in ToolApproval.objects.order_by("answer_id")
    ]
    assert decisions == [(answer, "approve") for answer in answers]
    assert await OutboxEmail.objects.acount() == 3


async def test_a_denial_reads_as_denied_in_the_list_and_the_folded_line_not_as_a_failure(
    alice, alice_conversation
):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    await socket.send_to(text_data=json.dumps({"deny": events[-1]["call_id"]}))
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert rest[-1]["summary"] == {"icon": "🚫", "text": "Denied"}
    feed = await ActivityFeed.objects.aget()
    assert (feed.summary_icon, feed.summary_text, feed.failed_tool_count) == ("🚫", "Denied", 0)
    client = await client_for(alice)
    row = (await client.get("/")).content.decode().split('<li class="conversation-row">')[1]
    assert "🚫 Denied" in row and "tool failed" not in row
    page = (await client.get(f"/c/{alice_conversation.pk}/")).content.decode()
    assert "Denied" in page and "Email not sent" not in page
