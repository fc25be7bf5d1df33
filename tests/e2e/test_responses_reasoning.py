"""Against a Responses API provider, a reasoning model's summary is a 💭 line while the model
thinks, and its text is there in history, as a Chat Completions model's reasoning is."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.browser import start_new
from tests.support.responses_server import Output, Reply, responses_server, usage
from tests.support.servers import serve

pytestmark = pytest.mark.e2e

SUMMARY = "Comparing the two offers before answering."


def test_the_reasoning_summary_shows_live_and_stays_in_history(page, tmp_path):
    events = (
        Output()
        .reasoning(SUMMARY, encrypted="gAAAA-x")
        .text("Take the second.")
        .events(usage(100, 40, reasoning=30))
    )
    # Held once the summary has streamed: the model is still thinking.
    thought = next(i for i, e in enumerate(events) if e["type"] == "response.output_item.done")
    with (
        responses_server([Reply(events, held=thought)]) as provider,
        serve(
            tmp_path,
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=provider.url,
            GLASSBOX_MODEL="o4-mini",
            GLASSBOX_MODEL_API="responses",
            GLASSBOX_TOOLS="chat.agent.builtin_tools.CALCULATOR",
        ) as server,
    ):
        page.goto(f"{server.url}/accounts/login/")
        page.fill("[name=username]", "demo")
        page.fill("[name=password]", "demo")
        page.click("main form button[type=submit]")
        start_new(page)
        page.fill("#question", "Which offer?")
        page.click("#composer button.send")

        expect(page.locator("details.feed li").first).to_contain_text("Thinking…")
        provider.release()
        expect(page.locator("article.assistant.state-complete .answer")).to_contain_text(
            "Take the second."
        )
        page.reload()
        page.locator("details.feed > summary").click()
        expect(page.locator("details.feed li").first).to_contain_text("Thought for")
        expect(page.locator("details.feed details.reasoning")).to_contain_text(SUMMARY)
        assert "gAAAA-x" not in page.content()
