"""RENDER rich in Chromium: each feed line shows its action, subject and detail apart, its
duration and outcome lined up with the other lines', live and reloaded from history."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, new_conversation
from tests.support.feed_users import user_with_feed

pytestmark = pytest.mark.e2e

DONE = "article.assistant.state-complete"


@pytest.fixture
def rich_conversation(browser, glassbox_server):
    url, env = glassbox_server
    user_with_feed(env, "rich", {"RENDER": "rich", "DETAIL": "raw"})
    context = browser.new_context(viewport={"width": 900, "height": 900}, locale="en-US")
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, url, "rich", "rich-password")
    new_conversation(page, url)
    yield page
    context.close()


def test_a_rich_feed_shows_each_lines_fields_and_lines_up_their_times(rich_conversation):
    page = rich_conversation
    page.fill("#question", "How do I negotiate my salary?")
    page.click("#composer button.send")
    for _ in range(2):  # as the turn ended, then reloaded from history
        expect(page.locator(DONE)).to_be_visible()
        page.locator(f"{DONE} details.feed > summary").click()
        lines = page.locator(f"{DONE} details.feed li.rich")
        looking = lines.filter(has_text="Looking up")
        expect(looking.locator(".action")).to_have_text("Looking up")
        expect(looking.locator(".subject")).to_contain_text("“negotiate salary”")
        expect(lines.filter(has_text="Found").locator(".action")).to_have_text("Found 3 documents")
        rights = [
            round(box["x"] + box["width"])
            for box in (d.bounding_box() for d in lines.locator(".duration").all())
            if box
        ]
        assert len(rights) >= 3 and max(rights) - min(rights) <= 1
        page.reload()
