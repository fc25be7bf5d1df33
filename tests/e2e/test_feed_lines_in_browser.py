"""A feed's lines as a person reads them in Chromium: one line each, cut at the reader's
width with the whole text in the tooltip and on focus, a long line that keeps its outcome,
and one language per feed; live, then reloaded from history."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, new_conversation
from tests.support.servers import manage

pytestmark = pytest.mark.e2e

DONE = "article.assistant.state-complete"
# Longer than the 100 characters the server lets through: it keeps 100 and adds "...".
FEEDBACK = (
    "Comparing the salary bands of senior engineers in Milan, Turin and Rome for 2026, "
    "with benefits and bonuses included"
)
SHOWN_FEEDBACK = FEEDBACK[:100] + "..."


@pytest.fixture
def narrow_conversation(browser, live_server_url):
    """A new conversation of the demo user, on a page narrower than a 103-character line."""
    context = browser.new_context(viewport={"width": 560, "height": 900}, locale="en-US")
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, live_server_url)
    new_conversation(page, live_server_url)
    yield page
    context.close()


RAW_USER = (
    "from django.contrib.auth import get_user_model; "
    "from activity.models import FeedPreferences; "
    "get_user_model().objects.filter(username='raw').delete(); "
    "user = get_user_model().objects.create_user('raw', password='raw-password'); "
    "FeedPreferences.objects.create(user=user, overrides={'DETAIL': 'raw'})"
)


@pytest.fixture
def raw_detail_conversation(browser, glassbox_server):
    """A new conversation of a user who chose DETAIL: raw, on a narrow page."""
    url, env = glassbox_server
    manage(env, "shell", "-c", RAW_USER)
    context = browser.new_context(viewport={"width": 560, "height": 900}, locale="en-US")
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, url, "raw", "raw-password")
    new_conversation(page, url)
    yield page
    context.close()


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.click("#composer button.send")


def unfolded_lines(page):
    """The finished turn's lines, its folded feed opened."""
    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()
    return page.locator(f"{DONE} details.feed li")


def shows_all_of_it(line) -> bool:
    """Nothing of the line is hidden by its box (scrolled away or clipped)."""
    return line.evaluate("li => li.scrollWidth <= li.clientWidth")


def one_line_high(line) -> bool:
    """The line's text takes one line of the page (seed 001: an edit in place never reflows)."""
    return line.evaluate(
        "li => { const t = li.querySelector('.text'); const h = t.getBoundingClientRect().height; "
        "return h < 1.5 * parseFloat(getComputedStyle(t).lineHeight); }"
    )


def whole_on_focus(line, whole: str) -> bool:
    line.focus()
    shown = line.evaluate("li => getComputedStyle(li, '::after').content")
    line.blur()
    return whole in shown


def test_the_models_feedback_is_cut_at_the_width_and_whole_on_focus(narrow_conversation):
    page = narrow_conversation
    ask(page, "bench__research " + json.dumps({"topic": "salaries", "feedback_to_user": FEEDBACK}))
    for _ in range(2):  # the lines the turn drew live, then the page reloaded from history
        line = unfolded_lines(page).filter(has_text="Comparing the salary bands")
        text = line.locator(".text").inner_text()
        assert len(text) == 80 and "…" in text and text.endswith("...")
        expect(line).to_have_attribute("title", SHOWN_FEEDBACK)
        assert one_line_high(line) and shows_all_of_it(line)
        assert whole_on_focus(line, SHOWN_FEEDBACK)
        page.reload()


def test_a_long_calculation_keeps_its_result_on_screen(narrow_conversation):
    page = narrow_conversation
    expression = "+".join(str(n) for n in range(1, 41))
    ask(page, f"What is {expression}?")
    for _ in range(2):
        line = unfolded_lines(page).filter(has_text="Calculated")
        text = line.locator(".text")
        expect(text).to_have_text(re.compile(r"^Calculated 1\+2\+3\+.*….*\+39\+40 = 820$"))
        expect(line).to_have_attribute("title", f"Calculated {expression} = 820")
        assert shows_all_of_it(line)
        page.reload()


def test_an_italian_question_on_an_english_page_gets_an_italian_feed(narrow_conversation):
    page = narrow_conversation
    ask(page, "Come posso prepararmi per un colloquio di lavoro?")
    for _ in range(2):
        lines = unfolded_lines(page)
        expect(page.locator(f"{DONE} details.feed > summary")).to_contain_text(
            "Ha cercato nella base di conoscenza"
        )
        expect(lines.filter(has_text="Cerco “")).to_be_visible()
        expect(lines.filter(has_text=re.compile(r"Trovat[oi] \d"))).to_be_visible()
        expect(lines.filter(has_text="Fatto")).to_be_visible()
        shown = " ".join(lines.all_inner_texts())
        for english in ("Searching", "Found", "Writing the answer", "Done"):
            assert english not in shown
        expect(page.locator(f"{DONE} .answer")).to_contain_text("Ecco cosa dice")
        expect(page.locator("#composer button.send")).to_have_text("Send")  # the page's own
        expect(page.locator(f"{DONE} details.feed ol.lines")).to_have_attribute("lang", "it")
        page.reload()


def test_a_raw_detail_shares_the_line_with_the_feedback_and_keeps_its_end(
    raw_detail_conversation,
):
    page = raw_detail_conversation
    topic = "/srv/knowledge/interviews/senior-engineering/milan/2026/preparation-guide.md"
    ask(page, "bench__research " + json.dumps({"topic": topic, "feedback_to_user": FEEDBACK}))
    for _ in range(2):
        line = unfolded_lines(page).filter(has_text="topic: /srv")
        text = line.locator(".text")
        expect(text).to_have_text(re.compile(r"^Comparing the.*, topic: /srv.*guide\.md$"))
        expect(line).to_have_attribute("title", f"{SHOWN_FEEDBACK}, topic: {topic}")
        assert one_line_high(line) and shows_all_of_it(line)
        page.reload()
