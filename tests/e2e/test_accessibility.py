"""axe-core on the pages people use: no serious or critical violation."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import DONE, ask, serious_violations

pytestmark = pytest.mark.e2e


def test_the_login_page(page, live_server_url):
    page.goto(f"{live_server_url}/accounts/login/")
    assert serious_violations(page) == []


def test_the_conversation_list_a_conversation_and_the_preferences(conversation):
    page = conversation
    ask(page, "How do I negotiate my salary?")
    expect(page.locator(DONE)).to_be_visible()
    assert serious_violations(page) == []  # the feed folded
    page.locator(f"{DONE} details.feed > summary").click()
    assert serious_violations(page) == []  # the feed expanded
    base = re.sub(r"/c/.*", "", page.url)
    for path in ("/", "/preferences/"):
        page.goto(base + path)
        assert serious_violations(page) == [], path


def test_a_waiting_call_with_its_card_open_and_the_inbox(conversation):
    page = conversation
    ask(page, "Email advisor@example.com: can we meet on Tuesday?")
    card = page.locator("section.approval-card")
    expect(card.locator("fieldset.arguments")).to_be_visible()
    assert serious_violations(page) == []  # read-only
    card.locator("details.receipt > summary").click()
    card.locator("a.change").click()
    to = card.get_by_role("textbox", name="To", exact=True)
    expect(to).to_be_editable()
    to.fill("not-an-address")
    card.locator("button.approve").click()
    expect(card.locator(".argument.invalid .error")).to_be_visible()
    assert serious_violations(page) == []  # being changed, with an edit refused
    turn = page.locator("article.assistant", has=card).get_attribute("id")
    here = re.sub(r"^https?://[^/]+", "", page.url)
    inbox = re.sub(r"/c/.*", "", page.url) + "/inbox/"
    page.goto(inbox)
    assert serious_violations(page) == []
    # The item links to the very turn that waits, and the page opens at it.
    page.locator(f"li.waiting-item a[href='{here}#{turn}']").click()
    expect(page).to_have_url(re.compile(rf"{re.escape(here)}#{turn}$"))
    expect(page.locator(f"article#{turn}")).to_be_in_viewport()
    # Marked as the linked one, and still so once its socket has drawn it as it stands.
    expect(page.locator(f"article#{turn}")).to_have_css("outline-style", "solid")
    page.goto(inbox)
    item = page.locator("li.waiting-item", has=page.locator(f"a[href='{here}#{turn}']"))
    item.locator("button.approve").click()  # leaves nothing waiting for other tests
    expect(page.locator(f"li.waiting-item a[href^='{here}']")).to_have_count(0)
