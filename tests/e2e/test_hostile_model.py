"""Everything the model writes is untrusted: nothing it sends may run in the page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import dismiss_dialogs, start_new
from tests.support.hostile_provider import FEEDBACK, LEAK, PAYLOADS

pytestmark = pytest.mark.e2e


def test_no_payload_runs_live_or_in_history(page, hostile_server_url):
    leaks: list[str] = []
    errors: list[str] = []
    dialogs = dismiss_dialogs(page)
    page.on("request", lambda request: leaks.append(request.url) if "127.0.0.1:9" in request.url
            else None)  # fmt: skip
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(f"{hostile_server_url}/accounts/login/")
    page.fill("[name=username]", "demo")
    page.fill("[name=password]", "demo")
    page.click("main form button[type=submit]")
    start_new(page)
    question = '<script>alert("title")</script> hi'
    page.fill("#question", question)
    page.click("#composer button.send")

    # Live: the feedback arrives as text while the answer streams.
    expect(page.locator("details.feed li").first).to_contain_text("Searching <b>now</b>")
    expect(page.locator("article.assistant.state-complete")).to_be_visible()
    for _ in range(2):  # live, then reloaded from history
        answer = page.locator("article.assistant .answer")
        expect(answer).to_contain_text("Here are the payloads")
        assert page.locator("#messages script, #messages img, #messages iframe").count() == 0
        assert page.locator("#messages svg, #messages object, #messages embed").count() == 0
        assert (
            page.locator("#messages [onerror], #messages [onload], #messages [hx-get]").count()
            == 0
        )
        for href in page.locator("#messages a").evaluate_all("els => els.map(a => a.href)"):
            assert href.startswith(("http://", "https://")), href
        page.locator("details.feed > summary").click()
        expect(page.locator("details.feed li").first).to_contain_text(
            FEEDBACK.replace("<img src=x onerror=alert('feedback')>", "").strip()[:10]
        )
        expect(page.locator("article.user")).to_contain_text('<script>alert("title")</script>')
        page.reload()
        page.wait_for_load_state("networkidle")

    assert page.title() == f"{question} · Glassbox"  # the title is text, not markup
    assert dialogs == []
    assert leaks == [], f"the page called {LEAK}"
    assert errors == []
    assert len(PAYLOADS) >= 20
