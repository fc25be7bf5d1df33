"""A person rates an answer and one of its tool calls, on a laptop and on a phone: the
thumbs are pressed at once (htmx), still pressed after a reload, reachable by keyboard,
named for a screen reader, big enough for a finger, and axe-core finds nothing serious."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import (
    DEVICES,
    DONE,
    TOUCH_TARGET,
    ask,
    console_errors,
    log_in,
    new_conversation,
    serious_violations,
    watch_console,
)

pytestmark = pytest.mark.e2e

ANSWER_RATING = f"{DONE} .answer-actions form.rating"
CALL_RATING = f"{DONE} details.feed li form.rating-call"


@pytest.fixture(params=list(DEVICES))
def device_page(request, browser, live_server_url):
    context = browser.new_context(**DEVICES[request.param])
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.device = request.param
    watch_console(page)
    log_in(page, live_server_url)
    new_conversation(page, live_server_url)
    yield page
    context.close()


def test_an_answer_and_a_tool_call_are_rated_and_stay_rated_after_a_reload(device_page):
    page = device_page
    ask(page, "How do I prepare for an interview?")
    expect(page.locator(DONE)).to_be_visible()

    # The answer: a note, then 👎, by the keyboard.
    answer = page.locator(ANSWER_RATING)
    down = answer.get_by_role("button", name="Bad")
    expect(down).to_have_attribute("aria-pressed", "false")
    answer.locator("details.rating-note > summary").click()
    answer.get_by_label("Note, sent with 👍 or 👎 (optional)").fill("Too generic")
    down.focus()
    page.keyboard.press("Enter")
    expect(page.locator(ANSWER_RATING).get_by_role("button", name="Bad")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(page.locator(ANSWER_RATING).get_by_role("status")).to_be_visible()

    # The tool call: on its line of the expanded feed.
    page.locator(f"{DONE} details.feed > summary").click()
    call = page.locator(CALL_RATING).first
    call.get_by_role("button", name="Good").click()
    expect(page.locator(CALL_RATING).first.get_by_role("button", name="Good")).to_have_attribute(
        "aria-pressed", "true"
    )
    # Changed: the latest counts.
    page.locator(CALL_RATING).first.get_by_role("button", name="Bad").click()
    expect(page.locator(CALL_RATING).first.get_by_role("button", name="Bad")).to_have_attribute(
        "aria-pressed", "true"
    )

    page.reload()
    expect(page.locator(DONE)).to_be_visible()
    rated = page.locator(ANSWER_RATING)
    expect(rated.get_by_role("button", name="Bad")).to_have_attribute("aria-pressed", "true")
    expect(rated.get_by_role("button", name="Good")).to_have_attribute("aria-pressed", "false")
    expect(rated.locator("textarea[name=note]")).to_have_value("Too generic")
    page.locator(f"{DONE} details.feed > summary").click()
    line = page.locator(CALL_RATING).first
    expect(line.get_by_role("button", name="Bad")).to_have_attribute("aria-pressed", "true")
    expect(line.get_by_role("button", name="Good")).to_have_attribute("aria-pressed", "false")

    if page.device == "phone":
        for thumb in page.locator(f"{DONE} form.rating button.rate").all():
            box = thumb.bounding_box()
            assert box is not None
            assert box["height"] >= TOUCH_TARGET and box["width"] >= TOUCH_TARGET, box
    assert serious_violations(page) == []
    assert console_errors(page) == []
