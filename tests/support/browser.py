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
    page.click("main button:text('New conversation')")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]+/$"))
