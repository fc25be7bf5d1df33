"""MCP tools in the page: a live progress bar, kept in history, and nothing a server writes
runs as script."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.support.browser import (
    DEVICES,
    DONE,
    ask,
    dismiss_dialogs,
    log_in,
    new_conversation,
    watch_console,
)

pytestmark = pytest.mark.e2e


def test_a_demo_survey_comparison_shows_its_progress_and_result(conversation):
    page = conversation
    ask(page, "Compare five salary surveys for an engineer")

    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer")).to_contain_text("the median for engineer is 58,000 €")
    expect(page.locator(f"{DONE} .answer table td", has_text="Hays Salary Guide")).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()
    bar = page.locator(f"{DONE} details.feed li progress")
    expect(bar).to_have_attribute("value", "5")
    expect(bar).to_have_attribute("max", "5")


# Every height each feed line had, recorded on every change of the page.
RECORD_HEIGHTS = """() => {
  window.lineHeights = {};
  const note = () => document.querySelectorAll('details.feed li.line').forEach(li => {
    (window.lineHeights[li.id] ||= new Set()).add(Math.round(li.getBoundingClientRect().height));
  });
  new MutationObserver(note).observe(document.body,
    {subtree: true, childList: true, characterData: true, attributes: true});
}"""


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_a_line_edited_in_place_keeps_its_height_and_history_ends_it_as_live_did(
    device, browser, live_server_url
):
    """Seed 001: the survey call's line goes from the model's feedback through five progress
    texts; cut at the reader's width, it stays one line high on a phone too. History ends
    it on the last progress text, as live did."""
    context = browser.new_context(**DEVICES[device])
    page = context.new_page()
    watch_console(page)
    log_in(page, live_server_url)
    new_conversation(page, live_server_url)
    page.evaluate(RECORD_HEIGHTS)
    ask(page, "Compare five salary surveys for an engineer with a long detailed comparison")
    expect(page.locator(DONE)).to_be_visible()
    heights = page.evaluate(
        "() => Object.fromEntries(Object.entries(window.lineHeights).map(([k, v]) => [k, [...v]]))"
    )
    edited = [key for key in heights if "call" in key]
    assert edited, heights
    for key in edited:
        assert len(heights[key]) == 1, (key, heights[key])

    page.reload()
    page.locator(f"{DONE} details.feed > summary").click()
    call_line = page.locator(f"{DONE} details.feed li.line", has=page.locator("progress"))
    expect(call_line.first).to_be_visible()
    lines = page.locator(f"{DONE} details.feed li.line")
    expect(lines.filter(has_text="5 of 5")).to_have_count(1)
    context.close()


def test_nothing_an_mcp_server_writes_runs_in_the_page(conversation, tmp_path):
    page = conversation
    errors: list[str] = []
    dialogs = dismiss_dialogs(page)
    page.on("pageerror", lambda error: errors.append(str(error)))
    gate = tmp_path / "gate"
    ask(page, "bench__hostile " + json.dumps({"gate": str(gate)}))

    # Live: the server's progress message is the running line's text, with its bar.
    running = page.locator("details.feed li.state-in_progress", has_text="window.pwned=2")
    expect(running).to_be_visible()
    expect(running.locator("progress")).to_have_attribute("max", "2")
    gate.write_text("open")
    expect(page.locator(DONE)).to_be_visible()
    for _ in range(2):  # live, then reloaded from history
        answer = page.locator(f"{DONE} .answer")
        expect(answer).to_contain_text("<script>window.pwned=3</script>")
        page.locator(f"{DONE} details.feed > summary").click()
        expect(page.locator(f"{DONE} details.feed li").nth(1)).to_contain_text(
            '“Hostile <img src=x onerror="window.pwned=1">” finished'
        )
        assert page.locator("#messages script, #messages img, #messages [onerror]").count() == 0
        assert page.evaluate("typeof window.pwned") == "undefined"
        page.reload()
        page.wait_for_load_state("networkidle")
    assert dialogs == [] and errors == []
