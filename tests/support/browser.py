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
    """The page of a new conversation, which is stored only when its first question is sent
    (then the browser moves to the conversation's own page)."""
    page.click("main a:text('New conversation')")
    expect(page).to_have_url(re.compile(r"/c/new/$"))


def open_menu(page: Page) -> None:
    """The header's menu (preferences, connections, language, theme, log out)."""
    page.click("details.menu > summary")
    expect(page.locator("details.menu .menu-panel")).to_be_visible()
