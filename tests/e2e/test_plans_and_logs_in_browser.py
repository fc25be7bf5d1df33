"""Seed 001's plans and command output in Chromium: the agent's plan is one checklist line
updated in place, and an MCP server's log messages are detail lines under its running call,
both kept after a reload; nothing a server logs runs as script."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import DONE, ask, serious_violations
from tests.support.mcp_server import HOSTILE

pytestmark = pytest.mark.e2e

PLANNED = "Plan it step by step: what time is it in Europe/Rome, and what is 52000 * 1.07 / 12?"
# How many plan lines were ever in the page at once, and how many were ever added.
COUNT_PLAN_LINES = """() => {
  window.planLines = {added: 0, most: 0};
  new MutationObserver(records => {
    for (const record of records) for (const node of record.addedNodes)
      if (node.nodeType === 1 && node.matches('li.line[id$="-plan"]')) window.planLines.added++;
    const now = document.querySelectorAll('li.line[id$="-plan"]').length;
    window.planLines.most = Math.max(window.planLines.most, now);
  }).observe(document.body, {subtree: true, childList: true});
}"""


def test_a_plan_is_one_checklist_line_ticked_off_in_place_and_kept(conversation):
    page = conversation
    page.evaluate(COUNT_PLAN_LINES)
    ask(page, PLANNED)

    expect(page.locator(DONE)).to_be_visible()
    # The first update added it, the next two replaced it where it stood.
    assert page.evaluate("window.planLines.most") == 1
    for _ in range(2):  # as the turn ended, then reloaded from history
        page.locator(f"{DONE} details.feed > summary").click()
        plan = page.locator(f'{DONE} details.feed li.line[id$="-plan"]')
        expect(plan).to_have_count(1)
        # The demo's knowledge base may add a search: a step of its own.
        expect(plan.locator(".text")).to_have_text(re.compile(r"^Plan: all [23] steps done$"))
        expect(plan.locator("li.step")).to_have_count(plan.locator("li.step-done").count())
        expect(plan.locator("li.step-done").first).to_have_text(
            "☑ done: Checking the current date and time"
        )
        expect(plan.locator("li.step-done").nth(1)).to_have_text(
            "☑ done: Calculating 52000 * 1.07 / 12"
        )
        assert serious_violations(page) == []
        page.reload()
        page.wait_for_load_state("networkidle")


def test_a_servers_log_lines_show_under_its_running_call_and_stay(conversation, tmp_path):
    page = conversation
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    gate = tmp_path / "gate"
    ask(page, "bench__migrate " + json.dumps({"gate": str(gate)}))

    running = page.locator("details.feed li.line.state-in_progress", has=page.locator("ul.logs"))
    expect(running.locator("ul.logs li")).to_have_count(3)  # from warning up, the default
    expect(running.locator("li.level-warning")).to_contain_text(f"table {HOSTILE} has no index")
    # A long message is one row cut with an ellipsis: the page never grows sideways.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    heights = running.locator("ul.logs li").evaluate_all(
        "items => items.map(item => Math.round(item.getBoundingClientRect().height))"
    )
    assert len(set(heights)) == 1, heights
    gate.write_text("open")
    expect(page.locator(DONE)).to_be_visible()
    for _ in range(2):
        page.locator(f"{DONE} details.feed > summary").click()
        logs = page.locator(f"{DONE} details.feed ul.logs li")
        expect(logs).to_have_count(3)
        expect(logs.first.locator(".level")).to_have_text("warning")
        assert serious_violations(page) == []
        assert page.locator("#messages img, #messages [onerror]").count() == 0
        page.reload()
        page.wait_for_load_state("networkidle")
    assert page.evaluate("typeof window.pwned") == "undefined" and errors == []
