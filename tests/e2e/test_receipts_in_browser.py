"""A person reviews what will run: the card shows the arguments and their fingerprint, the
arguments can be changed before approving (a wrong edit is refused and the call still
waits), and the inbox answers a call from another tab while the conversation goes on."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import DONE, log_in, new_conversation

pytestmark = pytest.mark.e2e

WAITING = "details.feed li.state-waiting"
CARD = "section.approval-card"


def test_the_card_shows_what_will_run_and_approves_it_with_edits(page, live_server_url):
    log_in(page, live_server_url)
    new_conversation(page, live_server_url)
    page.fill("#question", "Email advisor@example.com: can we meet on Tuesday?")
    page.click("#composer button.send")

    card = page.locator(CARD)
    to = card.get_by_role("textbox", name="To", exact=True)
    expect(to).to_have_value("advisor@example.com")
    card.locator("details.receipt > summary").click()
    expect(card.locator("p.fingerprint code")).to_have_attribute(
        "data-fingerprint", re.compile(r"^sha256:[0-9a-f]{64}$")
    )
    card.locator("a.change").click()
    expect(to).to_be_editable()
    to.fill("ab")
    card.locator("button.approve").click()
    expect(page.locator("#notice")).to_contain_text("The edited argument “to” is not valid")
    expect(page.locator(WAITING)).to_be_visible()  # nothing decided: it still waits
    # The card comes back as typed, the reason under the field: the fill goes into that one.
    expect(card.locator(".argument.invalid .error")).to_be_visible()

    to.fill("dean@example.com")
    card.locator("button.approve").click()
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer")).to_contain_text(
        "the email to dean@example.com is in the outbox"
    )
    expect(page.locator(CARD)).to_have_count(0)


def test_the_inbox_answers_a_call_and_the_conversation_goes_on_in_its_tab(
    browser, live_server_url
):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(20_000)
    chat = context.new_page()
    log_in(chat, live_server_url)
    new_conversation(chat, live_server_url)
    conversation = chat.url.removeprefix(live_server_url)
    chat.fill("#question", "Email board@example.com: the report is ready")
    chat.click("#composer button.send")
    expect(chat.locator(WAITING)).to_be_visible()

    inbox = context.new_page()
    inbox.goto(f"{live_server_url}/")
    expect(inbox.locator("#inbox-badge .count")).to_have_text(re.compile(r"^[1-9]\d*$"))
    inbox.click("#inbox-badge")
    expect(inbox).to_have_url(f"{live_server_url}/inbox/")
    # Linked to the turn that waits, and named by the question (the conversation is untitled).
    turn = inbox.locator(f"a[href^='{conversation}#m-']")
    item = inbox.locator("li.waiting-item", has=turn)
    expect(item.locator("p.where a")).to_have_text("Email board@example.com: the report is ready")
    expect(item.locator("p.where .deadline time")).to_be_visible()
    expect(item.get_by_role("textbox", name="To", exact=True)).to_have_value("board@example.com")
    item.locator("button.approve").click()

    expect(inbox).to_have_url(f"{live_server_url}/inbox/")
    expect(inbox.locator("main")).to_contain_text("Decided: the conversation goes on.")
    expect(inbox.locator(f"li.waiting-item a[href^='{conversation}#m-']")).to_have_count(0)
    expect(chat.locator(DONE)).to_be_visible()
    expect(chat.locator(f"{DONE} .answer")).to_contain_text(
        "the email to board@example.com is in the outbox"
    )
    context.close()
