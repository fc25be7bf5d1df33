"""An MCP server's question in the page: a person fills the card's form, the tool gets the
answer, and the card says who answered."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import DONE, ask, console_errors

pytestmark = pytest.mark.e2e


def test_a_person_fills_a_servers_form_and_the_tool_gets_the_answer(conversation):
    page = conversation
    ask(page, 'surveys__draft_offer_letter {"role": "designer"}')

    card = page.locator("#questions section.question")
    expect(card).to_contain_text("Who is the offer for designer addressed to?")
    expect(card.locator(".deadline time")).to_be_visible()
    expect(card.get_by_label("Tone")).to_have_value("formal")  # the server's default
    card.get_by_label("Candidate").fill("Ada Lovelace")
    card.get_by_label("Annual salary (EUR)").fill("61000")
    card.get_by_label("Fully remote").select_option("true")
    card.get_by_label("Tone").select_option("friendly")
    card.get_by_role("button", name="Send").click()

    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer")).to_contain_text("Hi Ada Lovelace")
    expect(page.locator(f"{DONE} .answer")).to_contain_text("fully remote")
    expect(card).to_contain_text("Answered by demo: Candidate: Ada Lovelace")
    expect(card.locator("form")).to_have_count(0)
    assert console_errors(page) == []
