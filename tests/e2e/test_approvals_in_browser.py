"""A call that asks first, in two tabs of its owner: both show the buttons, the first
decision wins, and the other tab follows at once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.test_turn_in_browser import DONE
from tests.support.browser import new_conversation

pytestmark = pytest.mark.e2e

WAITING = "details.feed li.state-waiting"


def logged_in_page(context, url):
    page = context.new_page()
    page.goto(f"{url}/accounts/login/")
    page.fill("[name=username]", "demo")
    page.fill("[name=password]", "demo")
    page.click("main form button[type=submit]")
    expect(page).to_have_url(f"{url}/")
    return page


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
        line = page.locator(WAITING)
        expect(line).to_contain_text("waiting for your approval")
        expect(line.locator("form.approve button")).to_be_visible()
        expect(line.locator("form.deny input[name=reason]")).to_be_visible()

    second.locator(f"{WAITING} form.deny input[name=reason]").fill("not on Tuesday")
    second.locator(f"{WAITING} form.deny button").click()
    for page in (first, second):
        expect(page.locator(DONE)).to_be_visible()
        expect(page.locator(f"{DONE} .answer")).to_contain_text("I did not send the email")
        assert page.locator("form.approve, form.deny").count() == 0
        page.locator(f"{DONE} details.feed > summary").click()
        expect(
            page.locator(f"{DONE} details.feed li", has_text="Denied by demo: not on Tuesday")
        ).to_be_visible()
    context.close()


def test_approving_sends_the_email_to_the_outbox(browser, live_server_url, glassbox_server):
    from tests.support.servers import manage

    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(20_000)
    page = logged_in_page(context, live_server_url)
    new_conversation(page, live_server_url)
    page.fill("#question", "Email team@example.com: the report is ready")
    page.click("#composer button.send")
    page.locator(f"{WAITING} form.approve button").click()

    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer")).to_contain_text(
        "the email to team@example.com is in the outbox"
    )
    count = (
        "from chat.models import OutboxEmail; "
        "print(OutboxEmail.objects.filter(to='team@example.com').count())"
    )
    assert manage(glassbox_server[1], "shell", "-c", count).strip().splitlines()[-1] == "1"
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

    page.locator(f"{WAITING} form.approve button").click()
    expect(page.locator(DONE)).to_be_visible()
    context.close()
