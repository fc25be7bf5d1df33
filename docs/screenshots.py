"""Takes the screenshots of the README and docs/ from a running Glassbox (`make run`), with
Debian's Chromium.

.venv/bin/python docs/screenshots.py http://127.0.0.1:8000
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

HERE = Path(__file__).parent


DONE = "article.assistant.state-complete"


def ask_anew(page, base: str, question: str) -> None:
    """A new conversation, and the question sent (the conversation is made then)."""
    page.goto(f"{base}/c/new/")
    page.fill("#question", question)
    page.click("#composer button.send")


def log_in(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("[name=username]", "demo")
    page.fill("[name=password]", "demo")
    page.click("main form button[type=submit]")


def phone(browser, base: str) -> None:
    """A 390 by 844 phone: a new conversation's starters, then an answer with its feed."""
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
        has_touch=True,
    )  # fmt: skip
    page = context.new_page()
    log_in(page, base)
    page.goto(f"{base}/c/new/")
    page.screenshot(path=HERE / "phone.png")
    page.locator("button.starter").first.tap()
    expect(page.locator(DONE)).to_be_visible(timeout=60_000)
    page.locator(f"{DONE} details.feed > summary").tap()
    page.screenshot(path=HERE / "phone-answer.png")
    page.locator("#sidebar-toggle").tap()
    page.screenshot(path=HERE / "phone-sidebar.png")
    context.close()


def main(base: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 800}, device_scale_factor=1)
        log_in(page, base)
        page.goto(f"{base}/c/new/")
        page.screenshot(path=HERE / "new-conversation.png")

        ask_anew(page, base, "How do I negotiate my salary?")
        expect(page.locator(".answer.streaming")).to_contain_text("market range", timeout=30_000)
        page.screenshot(path=HERE / "live-feed.png")
        expect(page.locator(DONE)).to_be_visible(timeout=60_000)
        page.reload()
        page.locator("details.feed summary").click()
        page.screenshot(path=HERE / "folded-history.png")

        # The demo MCP server's slow tool, halfway through its five surveys.
        ask_anew(page, base, "Compare five salary surveys for an engineer")
        expect(page.locator("details.feed li progress[value='3']")).to_be_visible(timeout=30_000)
        page.screenshot(path=HERE / "mcp-progress.png")

        # A turn that thinks: the feed with its tokens, expanded, with the reasoning open.
        ask_anew(page, base, "Think it through: how do I negotiate my salary?")
        expect(page.locator(DONE)).to_be_visible(timeout=60_000)
        page.reload()
        page.locator("details.feed > summary").click()
        page.locator("details.reasoning > summary").first.click()
        page.screenshot(path=HERE / "thinking-and-tokens.png")

        # The contact form the agent opens under its answer.
        ask_anew(page, base, "I would like to talk to a human advisor")
        expect(page.locator(".contact-form form")).to_be_visible(timeout=30_000)
        page.screenshot(path=HERE / "contact-form.png")

        # A tool that asks first, waiting for the user's decision.
        ask_anew(page, base, "Email advisor@example.com: can we meet on Tuesday?")
        expect(page.locator("section.approval-card button.approve")).to_be_visible(timeout=30_000)
        page.screenshot(path=HERE / "approval.png")
        page.locator("section.approval-card button.approve").click()
        expect(page.locator(DONE)).to_be_visible(timeout=30_000)

        # The dark theme, as a system set to dark shows it.
        dark = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="dark")
        page = dark.new_page()
        log_in(page, base)
        page.goto(f"{base}/")
        page.locator(".conversation-row a").first.click()
        page.screenshot(path=HERE / "dark.png")
        dark.close()

        phone(browser, base)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")
