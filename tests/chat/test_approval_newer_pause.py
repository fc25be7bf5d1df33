"""A turn paused by a newer release (its stored pause has a version this code does not know,
as during a deploy): every surface refuses a decision with the same clear words, and the turn
keeps waiting for a process that can go on with it, never a 500 or an answer left streaming."""

from __future__ import annotations

import json

import pytest
from django.test import AsyncClient

from activity.models import ActivityEvent
from chat.models import Message, OutboxEmail, ToolApproval
from chat.turns import resuming
from tests.support.api import client_for
from tests.support.sockets import finish_turns, json_until_done, paused_turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"
REFUSAL = (
    "This call was paused by a newer version of Glassbox than this server runs, so it cannot "
    "be decided here yet. Try again in a minute."
)


async def _stored_by_a_newer_release() -> ToolApproval:
    approval = await ToolApproval.objects.aget()
    approval.state = {**approval.state, "version": 99, "something": "new"}
    await approval.asave(update_fields=["state"])
    return approval


async def _still_waiting(approval: ToolApproval) -> None:
    await approval.arefresh_from_db()
    answer = await Message.objects.select_related("feed").aget(pk=approval.answer_id)
    assert (answer.state, answer.answer_feed.state) == ("waiting", "waiting")
    assert approval.decision == "" and approval.decided_at is None
    assert not await ActivityEvent.objects.filter(kind="decision").aexists()
    assert not await OutboxEmail.objects.aexists()


async def test_a_decision_on_a_newer_pause_is_refused_alike_by_rest_socket_and_form(
    alice, alice_conversation
):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    call_id = events[-1]["call_id"]
    approval = await _stored_by_a_newer_release()

    api = await client_for(alice)
    refused = await api.post(
        f"/api/conversations/{alice_conversation.pk}/approvals/{call_id}/",
        {"decision": "approve"},
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert refused.json() == {"detail": REFUSAL}
    await _still_waiting(approval)

    await socket.send_to(text_data=json.dumps({"deny": call_id, "reason": "not now"}))
    notice = json.loads(await socket.receive_from(timeout=10))
    assert notice == {"type": "error", "message": REFUSAL}
    await _still_waiting(approval)

    page = AsyncClient()
    await page.aforce_login(alice)
    posted = await page.post(f"/c/{alice_conversation.pk}/act/", {"approve": call_id})
    assert posted.status_code == 400
    assert REFUSAL in posted.content.decode()
    await _still_waiting(approval)
    await socket.disconnect()


async def test_a_newer_pause_outlives_its_deadline_here_and_can_still_be_stopped(
    alice, alice_conversation
):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    approval = await _stored_by_a_newer_release()
    await ToolApproval.objects.filter(pk=approval.pk).aupdate(deadline=approval.asked_at)

    # The watch of this process cannot deny it as timed out: one of the newer release will.
    assert await resuming.settle_expired() == 0
    await _still_waiting(approval)

    # Stop needs nothing of the stored pause: the turn ends as stopped, its call never run.
    answer_id = next(e["message_id"] for e in events if e["type"] == "turn")
    await socket.send_to(text_data=json.dumps({"stop": answer_id}))
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert rest[-1]["state"] == "stopped"
    await approval.arefresh_from_db()
    assert approval.decision == "stopped"
    assert not await OutboxEmail.objects.aexists()
