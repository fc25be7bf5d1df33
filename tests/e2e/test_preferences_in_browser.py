"""The preferences page in a real browser, at a desktop's size and a phone's: axe-core finds
no violation of any impact (every control labelled), the controls are at text size and big
enough for a finger on a touch screen, nothing scrolls sideways, and the folded programs'
settings still post with the rest."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.support.browser import DEVICES, TOUCH_TARGET, log_in

pytestmark = pytest.mark.e2e

CONTROLS = ".preferences form :is(input:not([type=hidden]), select, button, summary)"


@pytest.fixture(params=list(DEVICES))
def preferences(request, browser, live_server_url):
    context = browser.new_context(**DEVICES[request.param])
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.device = request.param
    log_in(page, live_server_url)
    page.goto(f"{live_server_url}/preferences/")
    yield page
    context.close()


def open_programs(page) -> None:
    # By the keyboard: until the header fits a phone (the lead's change to base.html, made at
    # the same time) the page is wider than the phone's screen and a tap there misses.
    page.locator("details.for-programs > summary").press("Enter")
    expect(page.locator("details.for-programs")).to_have_attribute("open", "")


def violations(page) -> list[str]:
    """Every violation axe-core reports, minor and moderate included."""
    return [
        f"{v['id']} ({v['impact']}): {', '.join(n['target'][0] for n in v['nodes'][:3])}"
        for v in Axe().run(page).response["violations"]
    ]


def test_every_control_is_labelled_with_the_programs_group_folded_and_open(preferences):
    page = preferences
    programs = page.locator("details.for-programs")
    expect(programs).not_to_have_attribute("open", "")
    assert violations(page) == []
    open_programs(page)
    expect(programs.get_by_role("group", name="Answer text")).to_be_visible()
    assert violations(page) == []


def test_controls_are_at_text_size_and_a_fingers_size_on_a_touch_screen(preferences):
    page = preferences
    open_programs(page)
    text = page.evaluate("getComputedStyle(document.body).fontSize")
    fields = page.locator(".preferences form :is(input:not([type=hidden]), select)")
    sizes = fields.evaluate_all("(all) => all.map((f) => getComputedStyle(f).fontSize)")
    assert sizes and set(sizes) == {text}

    if page.device == "phone":
        assert page.evaluate("matchMedia('(pointer: coarse)').matches")
        # A checkbox or radio is hit through its label, which is the target.
        targets = page.locator(
            f"{CONTROLS}:not([type=checkbox], [type=radio]), .preferences form label"
        )
        small = targets.evaluate_all(
            f"""(all) => all
                .map((e) => [e.name || e.textContent.trim().slice(0, 30),
                             e.getBoundingClientRect().height])
                .filter(([, height]) => height < {TOUCH_TARGET})"""
        )
        assert small == []


def test_nothing_scrolls_sideways(preferences):
    page = preferences
    open_programs(page)
    form = page.locator(".preferences form")
    width = page.viewport_size["width"]
    assert form.evaluate("(form) => form.scrollWidth") <= form.evaluate("(f) => f.clientWidth")
    box = form.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # the page too


def test_saving_with_the_programs_group_folded_posts_it_too(preferences):
    page = preferences
    # Unchanged values: the shared demo user keeps the settings other browser tests expect.
    page.locator(".preferences .actions button:not([name=reset])").press("Enter")
    expect(page.locator(".notice.success")).to_contain_text("Your next question uses these")
    expect(page.locator("details.for-programs")).not_to_have_attribute("open", "")
