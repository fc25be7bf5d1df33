"""The approval card explains before it asks: in a conversation and in the inbox, the tool's
title, its arguments under human labels (read-only until Change), until when it waits, its
receipt folded, then Approve and Deny. An edit that does not fit the tool runs nothing: the
card comes back as the owner left it, the reason under the field at fault, by the socket
and without JavaScript alike."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from django.test import AsyncClient

from chat.models import Message, OutboxEmail, ToolApproval
from chat.turns.registry import finish_all
from tests.support.cards import arguments, card_in, parse, parts
from tests.support.mcp import stdio
from tests.support.sockets import ask, finish_turns, frames_until, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"
BAD_ADDRESS = "Enter a valid email address."


async def logged_in(user) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


async def waiting_call(client, conversation) -> ToolApproval:
    """A turn of `conversation` that waits for its approval (its task ended there)."""
    await client.post(f"/c/{conversation.pk}/act/", {"message": EMAIL})
    await finish_all()
    return await ToolApproval.objects.aget(answer__conversation=conversation, decision="")


def edit(approval, **typed) -> dict:
    """The edit form's fields as a page sends them, after Change."""
    fields = {"to": "advisor@example.com", "subject": "Tuesday", "body": EMAIL} | typed
    return {
        "approve": approval.call_id,
        "fingerprint": approval.fingerprint,
        **{f"argument.{name}": value for name, value in fields.items()},
    }


async def still_waits(approval) -> None:
    await approval.arefresh_from_db()
    answer = await Message.objects.aget(pk=approval.answer_id)
    assert (approval.decision, answer.state) == ("", Message.State.WAITING)
    assert not await OutboxEmail.objects.aexists()


async def test_the_card_reads_top_to_bottom_and_its_decision_comes_last(alice, alice_conversation):
    client = await logged_in(alice)
    approval = await waiting_call(client, alice_conversation)

    page = (await client.get(f"/c/{alice_conversation.pk}/")).content.decode()

    card = card_in(page, approval.answer_id)
    assert card is not None
    assert parts(card) == ["title", "arguments", "change", "deadline", "receipt", "decision"]
    assert " ".join(card.one("h3").text.split()) == "⏸ Approve “Send an email”?"
    assert [(a.label, a.control, a.readonly, a.name) for a in arguments(card)] == [
        ("To", "input", True, None),
        ("Subject", "input", True, None),
        ("Message", "textarea", True, None),  # the body, on several lines
    ]
    assert arguments(card)[2].value == EMAIL
    deadline = card.find("p", "deadline")
    assert deadline is not None
    assert deadline.text.startswith("Waiting until ") and deadline.text.endswith(", then denied.")
    assert (
        deadline.one("time").attrs["datetime"].startswith(approval.deadline.strftime("%Y-%m-%dT"))
    )
    # The fingerprint is on the receipt, folded; Approve sends it, so a changed call is refused.
    receipt = card.find("details", "receipt")
    assert receipt is not None
    assert "open" not in receipt.attrs
    assert receipt.find("code", data_fingerprint=approval.fingerprint) is not None
    approve = card.find("button", "approve")
    assert approve is not None
    form = card.find("form", id=approve.attrs["form"])
    assert form is not None
    assert form.one("input", name="fingerprint").attrs["value"] == approval.fingerprint
    assert form.attrs["action"] == f"/c/{alice_conversation.pk}/act/" and "ws-send" in form.attrs
    assert card.one("form", "deny").find("input", name="reason") is not None
    # The feed's line only says that the call waits: its buttons are the card's.
    line = parse(page).find("li", "state-waiting")
    assert line is not None
    assert "waiting for your approval" in line.text and line.find("form") is None


async def test_change_makes_the_same_fields_editable_and_stops_the_no_js_refresh(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_call(client, alice_conversation)
    url = f"/c/{alice_conversation.pk}/"
    page = (await client.get(url)).content.decode()
    change = card_in(page, approval.answer_id).find("a", "change")
    assert change is not None
    assert (
        change.attrs["href"] == f"{url}?change={approval.answer_id}#approval-{approval.answer_id}"
    )
    assert (
        change.attrs["hx-select"] == change.attrs["hx-target"] == f"#approval-{approval.answer_id}"
    )

    changing = (await client.get(change.attrs["href"].split("#")[0])).content.decode()

    card = card_in(changing, approval.answer_id)
    assert [(a.label, a.control, a.readonly, a.name) for a in arguments(card)] == [
        ("To *", "input", False, "argument.to"),
        ("Subject *", "input", False, "argument.subject"),
        ("Message *", "textarea", False, "argument.body"),
    ]
    assert card.one("input", name="argument.to").attrs.get("autofocus") == ""
    assert card.one("button", "approve").text == "Approve with these arguments"
    assert card.one("a", "change").text == "Discard the changes"
    # Without JavaScript the page refreshes while a turn is open, but not under someone typing.
    assert 'http-equiv="refresh"' in page and 'http-equiv="refresh"' not in changing
    await still_waits(approval)


async def test_an_edit_that_does_not_fit_comes_back_without_javascript_with_the_reason_under_it(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_call(client, alice_conversation)

    refused = await client.post(
        f"/c/{alice_conversation.pk}/act/",
        edit(approval, to="not-an-address", subject="Thursday instead"),
    )

    assert refused.status_code == 400
    page = refused.content.decode()
    card = card_in(page, approval.answer_id)
    to, subject, _body = arguments(card)
    assert (to.value, to.error, to.readonly) == ("not-an-address", BAD_ADDRESS, False)
    assert (subject.value, subject.error) == ("Thursday instead", "")  # kept as typed
    field = card.find("input", name="argument.to")
    assert field is not None
    assert field.attrs["aria-invalid"] == "true" and "autofocus" in field.attrs
    assert f"{field.attrs['id']}-error" in field.attrs["aria-describedby"]
    assert "The edited argument “to” is not valid: Enter a valid email address." in page
    assert 'http-equiv="refresh"' not in page
    await still_waits(approval)

    fine = await client.post(
        f"/c/{alice_conversation.pk}/act/", edit(approval, to="dean@example.com")
    )
    await finish_all()
    assert fine.status_code == 302
    assert (await OutboxEmail.objects.aget()).to == "dean@example.com"


async def test_an_edit_that_does_not_fit_comes_back_over_the_socket_as_the_card_with_the_reason(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_call(client, alice_conversation)
    page = await open_socket(alice_conversation, alice)
    await frames_until(page, lambda frame: "approval-card" in frame)  # the page joins the turn
    # What htmx's ws-send makes of the edit form, with its headers.
    form = edit(approval, to="not-an-address", body="Line one\nLine two") | {"HEADERS": {}}

    await page.send_to(text_data=json.dumps(form))
    frames = await frames_until(page, lambda frame: "approval-card" in frame)

    notice = parse(frames[0]).find("div", id="notice")
    assert notice is not None
    assert notice.attrs["role"] == "alert"  # said to the reader, as the card comes back
    assert notice.text == "The edited argument “to” is not valid: Enter a valid email address."
    card = card_in(frames[-1], approval.answer_id)
    assert card.attrs["hx-swap-oob"] == "true"
    to, _subject, body = arguments(card)
    assert (to.value, to.error) == ("not-an-address", BAD_ADDRESS)
    assert (body.control, body.value) == ("textarea", "Line one\nLine two")
    await still_waits(approval)

    await page.send_to(text_data=json.dumps(edit(approval, to="dean@example.com")))
    await frames_until(page, lambda frame: "state-complete" in frame)
    await finish_turns()
    await page.disconnect()
    assert (await OutboxEmail.objects.aget()).to == "dean@example.com"


async def test_a_decision_on_a_card_that_showed_other_arguments_is_refused_by_the_page(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_call(client, alice_conversation)

    stale = await client.post(
        f"/c/{alice_conversation.pk}/act/",
        {"approve": approval.call_id, "fingerprint": "sha256:" + "0" * 64},
    )

    assert stale.status_code == 409
    assert "not the one your card showed any more" in stale.content.decode()
    await still_waits(approval)


async def test_the_inbox_changes_and_refuses_an_edit_the_same_way(alice, alice_conversation):
    client = await logged_in(alice)
    approval = await waiting_call(client, alice_conversation)
    inbox = (await client.get("/inbox/")).content.decode()
    card = card_in(inbox, approval.answer_id)
    assert parts(card) == ["title", "arguments", "change", "deadline", "receipt", "decision"]
    assert card.one("a", "change").attrs["href"].startswith(f"/inbox/?change={approval.answer_id}")
    assert "ws-send" not in card.one("form", "approve").attrs  # posted back to the inbox

    refused = await client.post(f"/inbox/{alice_conversation.pk}/act/", edit(approval, to="x@y"))

    assert refused.status_code == 400
    to, *_ = arguments(card_in(refused.content.decode(), approval.answer_id))
    assert (to.value, to.error, to.name) == ("x@y", BAD_ADDRESS, "argument.to")
    await still_waits(approval)


async def test_an_mcp_tool_is_named_by_its_servers_title_escaped_as_it_was_when_it_asked(
    settings, sessions, alice, alice_conversation
):
    from tests.support.mcp_server import HOSTILE

    settings.GLASSBOX_MCP_SERVERS = [replace(stdio("bench"), approval=frozenset({"hostile"}))]
    page = await open_socket(alice_conversation, alice)
    await ask(page, 'bench__hostile {"gate": ""}')
    frames = await frames_until(page, lambda frame: "approval-card" in frame, limit=30)
    await page.disconnect()

    approval = await ToolApproval.objects.aget()
    assert (approval.tool, approval.title) == ("bench__hostile", f"Hostile {HOSTILE}")
    page_html = (await (await logged_in(alice)).get(f"/c/{alice_conversation.pk}/")).content
    for html in (frames[-1], page_html.decode()):  # live, and when the page loads
        card = card_in(html, approval.answer_id)
        assert card is not None
        assert " ".join(card.one("h3").text.split()) == f"⏸ Approve “Hostile {HOSTILE}”?"
        assert card.find("img") is None  # its markup is text
        (gate,) = arguments(card)
        assert (gate.label, gate.value) == ("Gate", "")
        assert card.one("p", "tool").one("code").text == "bench__hostile"  # on the receipt
