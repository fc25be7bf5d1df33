"""A call that asks first. Its card explains before it asks: the tool's title, its arguments
under human labels (the body on several lines), until when it waits, its receipt folded,
and only then Approve and Deny; an edit that does not fit is refused under its field and
nothing runs. In two tabs of its owner the first decision wins and the other follows; and
without JavaScript the same card decides by POST."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import DONE, log_in, new_conversation
from tests.support.servers import manage

pytestmark = pytest.mark.e2e

WAITING = "details.feed li.state-waiting"
CARD = "section.approval-card"
BAD_ADDRESS = "Enter a valid email address."


def logged_in_page(context, url):
    page = context.new_page()
    log_in(page, url)
    return page


def sent_to(glassbox_server, address: str) -> int:
    count = (
        "from chat.models import OutboxEmail; "
        f"print(OutboxEmail.objects.filter(to={address!r}).count())"
    )
    return int(manage(glassbox_server[1], "shell", "-c", count).strip().splitlines()[-1])


def top(locator) -> float:
    box = locator.bounding_box()
    assert box is not None, locator
    return box["y"]


def test_the_card_explains_before_it_asks_and_refuses_an_edit_under_its_field(
    browser, live_server_url, glassbox_server
):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(20_000)
    page = logged_in_page(context, live_server_url)
    new_conversation(page, live_server_url)
    page.fill("#question", "Email advisor@example.com: can we meet on Tuesday?\nBest, Ann")
    page.click("#composer button.send")

    card = page.locator(CARD)
    title = card.locator("h3")
    expect(title).to_have_text("⏸ Approve “Send an email”?")
    expect(card.locator("label")).to_have_text(["To", "Subject", "Message"])
    to, subject, body = (
        card.get_by_role("textbox", name=label, exact=True)
        for label in ("To", "Subject", "Message")
    )
    expect(to).to_have_value("advisor@example.com")
    expect(to).not_to_be_editable()
    # The body is a box of several lines, all of them shown.
    expect(body).to_have_value("Email advisor@example.com: can we meet on Tuesday?\nBest, Ann")
    assert body.evaluate("e => e.tagName") == "TEXTAREA"
    line_height = float(body.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
    assert body.bounding_box()["height"] >= 2 * line_height
    deadline = card.locator("p.deadline")
    expect(deadline).to_have_text(re.compile(r"^Waiting until .+, then denied\.$"))
    expect(deadline.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
    receipt = card.locator("details.receipt")
    expect(receipt.locator("summary")).to_have_text("Receipt")
    expect(card.locator("p.fingerprint")).to_be_hidden()  # folded
    approve, deny = card.locator("button.approve"), card.locator("form.deny button")
    # Read top to bottom: what it is, what will run, until when, the receipt, then decide.
    order = [title, to, subject, body, deadline, receipt, approve]
    tops = [top(part) for part in order]
    assert tops == sorted(tops) and len(set(tops)) == len(tops), tops
    assert top(deny) == top(approve)  # side by side, below everything they decide on
    # The feed's line says it waits; it has no buttons of its own.
    line = page.locator(WAITING)
    expect(line).to_contain_text("waiting for your approval")
    expect(line.locator("button, form")).to_have_count(0)

    card.locator("a.change").click()
    expect(to).to_be_editable()
    expect(to).to_be_focused()
    expect(approve).to_have_text("Approve with these arguments")
    to.fill("not-an-address")
    approve.click()

    error = card.locator(".argument.invalid .error")
    expect(error).to_have_text(BAD_ADDRESS)
    expect(to).to_have_value("not-an-address")  # kept as typed
    expect(to).to_have_attribute("aria-invalid", "true")
    assert top(to) < top(error) < top(subject)  # under that field
    expect(page.locator("#notice")).to_contain_text("The edited argument “to” is not valid")
    expect(page.locator(WAITING)).to_be_visible()  # nothing decided: it still waits
    assert sent_to(glassbox_server, "not-an-address") == 0

    to.fill("card-dean@example.com")
    approve.click()
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer")).to_contain_text(
        "the email to card-dean@example.com is in the outbox"
    )
    expect(page.locator(CARD)).to_have_count(0)
    assert sent_to(glassbox_server, "card-dean@example.com") == 1
    context.close()


def test_both_tabs_ask_the_first_decision_wins_and_the_other_follows(browser, live_server_url):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(20_000)
    first = logged_in_page(context, live_server_url)
    new_conversation(first, live_server_url)
    second = context.new_page()
    second.goto(first.url)
    expect(second.locator("#composer")).to_be_visible()

    first.fill("#question", "Email advisor@example.com: can we meet on Tuesday?")
    first.click("#composer button.send")
    for page in (first, second):
        expect(page.locator(WAITING)).to_contain_text("waiting for your approval")
        expect(page.locator(f"{CARD} button.approve")).to_be_visible()
        expect(page.locator(f"{CARD} form.deny input[name=reason]")).to_be_visible()

    second.locator(f"{CARD} form.deny input[name=reason]").fill("not on Tuesday")
    second.locator(f"{CARD} form.deny button").click()
    for page in (first, second):
        expect(page.locator(DONE)).to_be_visible()
        expect(page.locator(f"{DONE} .answer")).to_contain_text("I did not send the email")
        assert page.locator("button.approve, form.approve, form.deny").count() == 0
        page.locator(f"{DONE} details.feed > summary").click()
        expect(
            page.locator(f"{DONE} details.feed li", has_text="Denied by demo: not on Tuesday")
        ).to_be_visible()
    context.close()


def test_approving_sends_the_email_to_the_outbox(browser, live_server_url, glassbox_server):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(20_000)
    page = logged_in_page(context, live_server_url)
    new_conversation(page, live_server_url)
    page.fill("#question", "Email team@example.com: the report is ready")
    page.click("#composer button.send")
    page.locator(f"{CARD} button.approve").click()

    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer")).to_contain_text(
        "the email to team@example.com is in the outbox"
    )
    assert sent_to(glassbox_server, "team@example.com") == 1
    context.close()


def test_a_reloaded_page_waiting_for_approval_does_not_say_it_waits_for_the_agent(
    browser, live_server_url
):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(20_000)
    page = logged_in_page(context, live_server_url)
    new_conversation(page, live_server_url)
    page.fill("#question", "Email advisor@example.com: shall we move the call?")
    page.click("#composer button.send")
    expect(page.locator(WAITING)).to_be_visible()

    page.reload()
    turn = page.locator("article.assistant.state-waiting")
    expect(turn.locator(WAITING)).to_be_visible()
    # The card the approved answer streams into: the rule that hides the line holds for it.
    expect(turn.locator("p.waiting")).to_be_attached()
    expect(turn.locator("p.waiting")).to_be_hidden()

    page.locator(f"{CARD} button.approve").click()
    expect(page.locator(DONE)).to_be_visible()
    context.close()


def test_without_javascript_the_card_changes_refuses_and_approves_by_post(
    browser, live_server_url, glassbox_server
):
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, java_script_enabled=False
    )
    context.set_default_timeout(20_000)
    page = logged_in_page(context, live_server_url)
    new_conversation(page, live_server_url)
    page.fill("#question", "Email advisor@example.com: lunch on Friday?")
    page.click("#composer button.send")
    card = page.locator(CARD)
    expect(card.get_by_role("textbox", name="To", exact=True)).to_have_value("advisor@example.com")

    card.locator("a.change").click()  # the page again, this card's fields editable
    expect(page).to_have_url(re.compile(r"\?change=\d+#approval-\d+$"))
    to = card.get_by_role("textbox", name="To", exact=True)
    expect(to).to_be_editable()
    to.fill("nobody")
    response_status = []
    page.on(
        "response",
        lambda r: response_status.append(r.status) if r.request.method == "POST" else None,
    )
    card.locator("button.approve").click()

    expect(card.locator(".argument.invalid .error")).to_have_text(BAD_ADDRESS)
    assert response_status == [400]
    expect(to).to_have_value("nobody")
    expect(page.locator("article.assistant.state-waiting")).to_be_attached()
    assert sent_to(glassbox_server, "nobody") == 0

    to.fill("nojs-dean@example.com")
    card.locator("button.approve").click()
    expect(page.locator(f"{DONE} .answer")).to_contain_text(
        "the email to nojs-dean@example.com is in the outbox", timeout=30_000
    )
    assert sent_to(glassbox_server, "nojs-dean@example.com") == 1
    context.close()


def test_on_a_touch_screen_every_control_of_the_card_is_a_finger_tall(browser, live_server_url):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    )
    context.set_default_timeout(20_000)
    page = logged_in_page(context, live_server_url)
    new_conversation(page, live_server_url)
    assert page.evaluate("matchMedia('(pointer: coarse)').matches")
    page.fill("#question", "Email advisor@example.com: coffee?")
    page.locator("#composer button.send").dispatch_event("click")
    card = page.locator(CARD)
    expect(card.locator("button.approve")).to_be_visible()

    controls = card.locator(
        "button:visible, a.change, summary, input:visible, form.deny input[name=reason]"
    )
    heights = {
        control.evaluate("e => e.outerHTML.slice(0, 60)"): control.bounding_box()["height"]
        for control in controls.all()
    }
    assert len(heights) >= 7 and all(h >= 44 for h in heights.values()), heights
    page.locator(f"{CARD} button.approve").dispatch_event("click")
    expect(page.locator(DONE)).to_be_visible()
    context.close()
