"""The page with scripting off in Chromium's own setting: the composer is a plain form, its
POST starts the turn, and the page's <noscript> refresh brings the finished answer."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, start_new
from tests.support.servers import serve

pytestmark = pytest.mark.e2e

# Slow enough that the answer is still being written when the POST's page arrives, so only
# the refresh can bring it (a search and its answer take a few seconds at this pace).
SLOW_DEMO_DELAY = "0.02"


@pytest.fixture(scope="module")
def slow_server_url(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("nojs"), GLASSBOX_DEMO_DELAY=SLOW_DEMO_DELAY) as server:
        yield server.url


@pytest.fixture
def page_without_javascript(browser, slow_server_url):
    context = browser.new_context(java_script_enabled=False)
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, slow_server_url)
    yield page
    context.close()


def test_without_javascript_the_page_refreshes_until_the_answer_is_there(
    page_without_javascript,
):
    page = page_without_javascript
    start_new(page)
    page.fill("#question", "How do I negotiate my salary?")
    asked = time.monotonic()
    page.click("#composer button.send")

    # The POST's page: the answer is still being written, and nothing but the refresh moves.
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]+/$"))
    expect(page.locator("article.assistant.state-streaming")).to_be_attached()
    assert page.locator("article.assistant.state-complete").count() == 0

    done = page.locator("article.assistant.state-complete")
    expect(done.locator(".answer")).to_contain_text("knowledge base", timeout=30_000)
    took = time.monotonic() - asked
    # It came by a refresh, which keeps the answer in view, and the refreshing stops there.
    assert re.search(r"\?refresh=\d+#m-\d+$", page.url), page.url
    expect(done.locator("details.feed > summary")).to_contain_text("Searched the knowledge base")
    assert page.locator("head noscript").count() == 0
    print(f"no-JS answer on screen {took:.1f} s after Send")
