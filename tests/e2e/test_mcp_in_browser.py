"""MCP tools in the page: a live progress bar, kept in history, and nothing a server writes
runs as script."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.support.browser import DONE, ask

pytestmark = pytest.mark.e2e


def test_a_demo_survey_comparison_shows_its_progress_and_result(conversation):
    page = conversation
    ask(page, "Compare five salary surveys for an engineer")

    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer")).to_contain_text("the median for engineer is 58,000 €")
    expect(page.locator(f"{DONE} .answer table td", has_text="Hays Salary Guide")).to_be_visible()
    page.locator(f"{DONE} details.feed summary").click()
    bar = page.locator(f"{DONE} details.feed li progress")
    expect(bar).to_have_attribute("value", "5")
    expect(bar).to_have_attribute("max", "5")


def test_nothing_an_mcp_server_writes_runs_in_the_page(conversation, tmp_path):
    page = conversation
    dialogs, errors = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
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
        page.locator(f"{DONE} details.feed summary").click()
        expect(page.locator(f"{DONE} details.feed li").nth(1)).to_contain_text(
            '“Hostile <img src=x onerror="window.pwned=1">” finished'
        )
        assert page.locator("#messages script, #messages img, #messages [onerror]").count() == 0
        assert page.evaluate("typeof window.pwned") == "undefined"
        page.reload()
        page.wait_for_load_state("networkidle")
    assert dialogs == [] and errors == []
