"""Receipts bound to the arguments: what a card shows is fingerprinted, the decision seals
the fingerprint (and any edits) into the feed's chain, a call that differs from what was
approved does not run, an approval may change the arguments, and a pause stored by the last
release still resumes."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.utils import timezone

from activity.models import ActivityEvent
from activity.recording.receipts import fingerprint
from chat.models import OutboxEmail, ToolApproval
from tests.support.api import client_for
from tests.support.audit import sql, verify
from tests.support.cards import arguments, card_in
from tests.support.sockets import (
    ask,
    finish_turns,
    frames_until,
    json_until_done,
    open_socket,
    paused_turn,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


async def paused(conversation, user):
    socket, events = await paused_turn(conversation, user, EMAIL)
    (call,) = [e for e in events if e["type"] == "tool_call"]
    url = f"/api/conversations/{conversation.pk}/approvals/{call['call_id']}/"
    return socket, call, url


async def post(client, url, body):
    return await client.post(url, body, content_type="application/json")


async def test_the_card_shows_what_will_run_with_the_fingerprint_of_its_canonical_json(
    alice, alice_conversation
):
    socket, call, url = await paused(alice_conversation, alice)
    owner = await client_for(alice)
    receipt = (await owner.get(url)).json()
    await socket.disconnect()

    assert receipt["arguments"] == call["arguments"]
    # Key order and spacing do not change it: the RFC 8785 form is what is hashed.
    reordered = json.loads(json.dumps(dict(reversed(list(call["arguments"].items())))))
    assert receipt["fingerprint"] == fingerprint(reordered) == fingerprint(call["arguments"])
    assert receipt["fingerprint"].startswith("sha256:") and len(receipt["fingerprint"]) == 71
    assert receipt["decision"] == "" and receipt["parameters"]["properties"]["to"]
    outsider = await owner.get(url.replace(str(alice_conversation.pk), "0" * 32))
    assert outsider.status_code == 404


async def test_an_approval_seals_who_when_why_and_the_fingerprint_into_the_chain(
    alice, alice_conversation
):
    socket, call, url = await paused(alice_conversation, alice)
    owner = await client_for(alice)
    approved = await post(owner, url, {"decision": "approve", "reason": "as agreed"})
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert approved.status_code == 200
    decision = approved.json()
    assert decision["fingerprint"] == fingerprint(call["arguments"])
    # Approved as asked: the decision names no edited arguments.
    assert (decision["by"], decision["reason"], "edited_arguments" in decision) == (
        "alice", "as agreed", False
    )  # fmt: skip
    assert rest[-1]["state"] == "complete" and await OutboxEmail.objects.acount() == 1
    stored = await ActivityEvent.objects.aget(kind="decision")
    assert stored.arguments == {"fingerprint": decision["fingerprint"]}
    # The receipt is in the sealed record: changing it breaks the chain.
    assert (await sync_to_async(verify)())[0] == 0
    forged = json.dumps({"fingerprint": "sha256:" + "0" * 64})
    await sync_to_async(sql)(
        "UPDATE activity_activityevent SET arguments = %s WHERE id = %s", forged, stored.pk
    )
    assert (await sync_to_async(verify)())[0] != 0


async def test_a_call_changed_after_it_was_shown_does_not_run_and_the_feed_says_why(
    alice, alice_conversation
):
    socket, call, url = await paused(alice_conversation, alice)
    # Behind the card's back, the stored call now sends elsewhere.
    approval = await ToolApproval.objects.aget()
    state = approval.state
    state["pending"][0]["arguments"] = json.dumps(
        call["arguments"] | {"to": "attacker@example.com"}
    )
    await ToolApproval.objects.filter(pk=approval.pk).aupdate(state=state)

    approved = await post(await client_for(alice), url, {"decision": "approve"})
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert approved.status_code == 200
    assert not await OutboxEmail.objects.aexists()
    (result,) = [e for e in rest if e["type"] == "tool_result"]
    assert result["ok"] is False
    assert "not the ones you approved" in result["summary"]
    failed = [e for e in rest if e["type"] == "status" and e["state"] == "failed"]
    assert failed and failed[0]["icon"] == "❌"
    assert "not run: its arguments are not the ones you approved" in failed[0]["message"]
    assert rest[-1]["state"] == "complete"


async def test_a_decision_on_a_card_that_showed_other_arguments_decides_nothing(
    alice, alice_conversation
):
    socket, call, url = await paused(alice_conversation, alice)
    owner = await client_for(alice)
    stale = await post(
        owner, url, {"decision": "approve", "fingerprint": fingerprint({"to": "x@example.com"})}
    )

    assert stale.status_code == 409 and "reload" in stale.json()["detail"]
    assert (await ToolApproval.objects.aget()).decision == ""
    assert not await ActivityEvent.objects.filter(kind="decision").aexists()
    shown = fingerprint(call["arguments"])
    approved = await post(owner, url, {"decision": "approve", "fingerprint": shown})
    assert approved.status_code == 200
    await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()


async def test_approved_with_edits_the_edited_arguments_run_both_are_sealed_and_the_model_is_told(
    alice, alice_conversation, admin_user
):
    socket, call, url = await paused(alice_conversation, alice)
    edited = call["arguments"] | {"to": "dean@example.com", "subject": "Tuesday?"}
    approved = await post(
        await client_for(alice), url, {"decision": "approve", "edited_arguments": edited}
    )
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert approved.status_code == 200
    assert approved.json()["edited_arguments"] == edited
    assert approved.json()["fingerprint"] == fingerprint(edited)
    mail = await OutboxEmail.objects.aget()
    assert (mail.to, mail.subject) == ("dean@example.com", "Tuesday?")
    # The model's call stays as it asked; the owner's version is sealed with the decision.
    asked = await ActivityEvent.objects.aget(kind="tool_call")
    assert asked.arguments is not None and asked.arguments["to"] == "advisor@example.com"
    decision = await ActivityEvent.objects.aget(kind="decision")
    assert decision.arguments is not None and decision.arguments["edited_arguments"] == edited
    result = await ActivityEvent.objects.aget(kind="tool_result")
    told = json.loads(result.result_content)
    assert told["changed_by_user"]["to"] == {
        "asked": "advisor@example.com", "approved": "dean@example.com"
    }  # fmt: skip
    assert told["to"] == "dean@example.com" and told["sent"] is True
    assert rest[-1]["state"] == "complete"
    approval = await ToolApproval.objects.aget()
    assert approval.edited_arguments == edited
    assert (await sync_to_async(verify)())[0] == 0
    # The admin's Tool approvals show the receipt beside what the model asked.
    admin = await client_for(admin_user)
    page = (await admin.get(f"/admin/chat/toolapproval/{approval.pk}/change/")).content.decode()
    assert approval.fingerprint in page and "dean@example.com" in page


NOT_VALID = "The edited argument “{}” is not valid: {}"
TOO_LONG = "Enter at most 200 characters."


@pytest.mark.parametrize(
    "edit, body",
    [
        ({"to": 5}, {"to": [NOT_VALID.format("to", "This must be text.")]}),
        (
            {"to": "not-an-address"},
            {"to": [NOT_VALID.format("to", "Enter a valid email address.")]},
        ),
        ({"to": "x@y"}, {"to": [NOT_VALID.format("to", "Enter a valid email address.")]}),
        ({"subject": ""}, {"subject": [NOT_VALID.format("subject", "This field is required.")]}),
        ({"subject": "s" * 201}, {"subject": [NOT_VALID.format("subject", TOO_LONG)]}),
        ({"cc": "me"}, {"cc": ["This tool has no argument “cc”."]}),
        ({"body": None}, {"body": [NOT_VALID.format("body", "This must be text.")]}),
        ({"body": ...}, {"body": [NOT_VALID.format("body", "This field is required.")]}),
        ("not an object", ["The edited arguments must be a JSON object."]),
    ],
    ids=["type", "email", "email-without-domain", "empty", "too-long", "unknown", "null",
         "missing", "not-an-object"],
)  # fmt: skip
async def test_an_invalid_edit_is_refused_naming_its_argument_and_nothing_runs(
    alice, alice_conversation, edit, body
):
    socket, call, url = await paused(alice_conversation, alice)
    owner = await client_for(alice)
    if isinstance(edit, dict):  # the model's arguments, with this change (... takes one out)
        edit = {k: v for k, v in (call["arguments"] | edit).items() if v is not ...}
    refused = await post(owner, url, {"decision": "approve", "edited_arguments": edit})

    assert refused.status_code == 400
    assert refused.json() == {"edited_arguments": body}
    approval = await ToolApproval.objects.aget()
    assert (approval.decision, approval.edited_arguments) == ("", None)
    assert not await ActivityEvent.objects.filter(kind="decision").aexists()
    # The call still waits, and can be decided.
    assert (await post(owner, url, {"decision": "deny"})).status_code == 200
    await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert not await OutboxEmail.objects.aexists()


async def test_a_pause_stored_by_the_last_release_without_a_version_still_resumes(
    alice, alice_conversation
):
    socket, _call, url = await paused(alice_conversation, alice)
    approval = await ToolApproval.objects.aget()
    assert approval.state["version"] == 2
    # The last release's shape: no version, no fingerprint, no parameters.
    old = {k: approval.state[k] for k in ("conversation", "round", "pending")}
    await ToolApproval.objects.filter(pk=approval.pk).aupdate(
        state=old, fingerprint="", parameters=None
    )

    approved = await post(await client_for(alice), url, {"decision": "approve"})
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert approved.status_code == 200 and "fingerprint" not in approved.json()
    assert rest[-1]["state"] == "complete"
    assert (await OutboxEmail.objects.aget()).to == "advisor@example.com"


def evidence() -> list[dict]:
    out = io.StringIO()
    day = timezone.now().date()
    call_command("export_evidence", "--since", day.isoformat(),
                 "--until", (day + timedelta(days=1)).isoformat(), stdout=out)  # fmt: skip
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_the_evidence_and_the_feed_export_carry_each_receipt_checked_again(
    alice, alice_conversation
):
    socket, call, url = await paused(alice_conversation, alice)
    edited = call["arguments"] | {"to": "dean@example.com"}
    owner = await client_for(alice)
    await post(owner, url, {"decision": "approve", "edited_arguments": edited})
    await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    records = await sync_to_async(evidence)()
    (receipt,) = [r for r in records if r["record"] == "receipt"]
    assert receipt["fingerprint"] == fingerprint(edited) and receipt["matches"] is True
    assert (receipt["by"], receipt["decision"], receipt["edited"]) == ("alice", "approve", True)
    assert (
        receipt["edited_arguments"] == edited and receipt["asked_arguments"] == call["arguments"]
    )
    assert receipt["at"] and records[-1]["counts"]["receipts"] == 1
    (feed,) = (await owner.get("/api/feeds/")).json()["results"]
    (decision,) = [e for e in feed["events"] if e["type"] == "decision"]
    assert decision["fingerprint"] == receipt["fingerprint"]
    assert decision["edited_arguments"] == edited


async def test_a_page_gets_the_card_live_and_again_when_it_joins_and_loses_it_once_decided(
    alice, alice_conversation
):
    page = await open_socket(alice_conversation, alice)
    await ask(page, EMAIL)
    frames = await frames_until(page, lambda frame: "approval-card" in frame)
    approval = await ToolApproval.objects.aget()
    card = frames[-1]
    assert f'<section id="approval-{approval.answer_id}"' in card
    assert f'data-fingerprint="{approval.fingerprint}"' in card
    assert "Approve “Send an email”?" in card
    (to, *_others) = arguments(card_in(card, approval.answer_id))
    assert (to.label, to.value, to.readonly, to.name) == ("To", "advisor@example.com", True, None)
    await page.disconnect()

    # A page that opens while the call waits (a reload) gets the card with the turn.
    again = await open_socket(alice_conversation, alice)
    await again.send_to(text_data=json.dumps({"resume": [approval.answer_id]}))
    frames = await frames_until(again, lambda frame: "approval-card" in frame)
    assert f'data-fingerprint="{approval.fingerprint}"' in frames[-1]
    await again.send_to(text_data=json.dumps({"approve": approval.call_id}))
    emptied = f'<div id="approval-{approval.answer_id}" class="approval-slot" hx-swap-oob="true">'
    await frames_until(again, lambda frame: emptied in frame)
    await frames_until(again, lambda frame: "state-complete" in frame)
    await finish_turns()
    await again.disconnect()
