"""Steps every browser test takes: logging in as a person does, opening a new conversation."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect


def log_in(page: Page, url: str, username: str = "demo", password: str = "demo") -> None:
    page.goto(f"{url}/accounts/login/")
    page.fill("[name=username]", username)
    page.fill("[name=password]", password)
    page.click("main form button[type=submit]")
    expect(page).to_have_url(f"{url}/")


def new_conversation(page: Page, url: str) -> None:
    """An empty conversation's own page, its socket open: made as a program makes one (the
    page's New conversation stores nothing until its first question; see start_new)."""
    made = page.evaluate(
        """async () => {
            const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
            const response = await fetch("/api/conversations/", {
                method: "POST", credentials: "same-origin", body: "{}",
                headers: {"Content-Type": "application/json", "X-CSRFToken": token},
            });
            return (await response.json()).id;
        }"""
    )
    page.goto(f"{url}/c/{made}/")
    expect(page.locator("section.conversation[ws-connect]")).to_be_attached()


def start_new(page: Page) -> None:
    """The page's New conversation: a page that stores nothing yet."""
    page.locator("a.new-conversation:visible").first.click()
    expect(page).to_have_url(re.compile(r"/c/new/$"))


def open_menu(page: Page) -> None:
    """The header's menu (preferences, connections, language, theme, log out)."""
    page.click("details.menu > summary")
    expect(page.locator("details.menu .menu-panel")).to_be_visible()


# The two screens the page is judged on: a laptop, and a phone under Chromium's mobile
# emulation (touch events, `is_mobile`, a phone's pixel ratio).
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 3,
}
DEVICES = {"desktop": DESKTOP, "phone": PHONE}
# The smallest target a finger hits reliably (WCAG 2.5.5).
TOUCH_TARGET = 44


def watch_console(page: Page) -> None:
    """Keeps the page's console errors in `page.console_errors` (a CSP violation is one)."""
    page.console_errors = []  # type: ignore[attr-defined]
    page.on(
        "console",
        lambda message: (
            page.console_errors.append(message.text)  # type: ignore[attr-defined]
            if message.type == "error"
            else None
        ),
    )


# A finished answer on the page.
DONE = "article.assistant.state-complete"


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.click("#composer button.send")


SERIOUS = {"serious", "critical"}


def serious_violations(page) -> list[str]:
    """axe-core's serious and critical violations on the page as it stands."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {', '.join(n['target'][0] for n in v['nodes'][:3])}"
        for v in results.response["violations"]
        if v["impact"] in SERIOUS
    ]
