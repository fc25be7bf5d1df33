"""An Italian user and a Chinese user, each in a real browser: the whole page, the live feed
and the folded summary in their language."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from playwright.sync_api import expect

from tests.support.browser import new_conversation, open_menu, start_new
from tests.support.servers import manage

pytestmark = pytest.mark.e2e

NEW_USER = (
    "from django.contrib.auth import get_user_model; "
    "get_user_model().objects.filter(username='{name}').delete(); "
    "get_user_model().objects.create_user('{name}', password='{name}-password')"
)


@contextmanager
def new_user_in_browser(browser, server, name: str, locale: str):
    """A page logged in as a new user, in a browser set to `locale`."""
    url, env = server
    manage(env, "shell", "-c", NEW_USER.format(name=name))
    context = browser.new_context(locale=locale)
    page = context.new_page()
    page.goto(f"{url}/accounts/login/")
    page.fill("[name=username]", name)
    page.fill("[name=password]", f"{name}-password")
    page.click("main form button[type=submit]")
    expect(page).to_have_url(f"{url}/")
    try:
        yield page
    finally:
        context.close()


def test_an_italian_user_picks_italian_in_the_switcher(browser, glassbox_server):
    with new_user_in_browser(browser, glassbox_server, "giulia", "en-US") as page:
        italian_turn(page)


def italian_turn(page) -> None:
    expect(page.locator("h1")).to_have_text("Your conversations")
    open_menu(page)
    page.click(".language-switcher button[lang=it]")
    expect(page.locator("h1")).to_have_text("Le tue conversazioni")
    page.click("main a:text('Nuova conversazione')")
    expect(page).to_have_url(re.compile(r"/c/new/$"))
    page.fill("#question", "Come posso negoziare il mio stipendio?")
    page.click("#composer button.send")

    # The demo model answers in a fraction of a second, so the lines are checked once folded
    # (the socket tests check them live).
    done = page.locator("article.assistant.state-complete")
    expect(done).to_be_visible()
    summary = done.locator("details.feed > summary")
    expect(summary).to_have_text(re.compile("Ha cercato nella base di conoscenza"))
    summary.click()
    expect(done.locator("details.feed li", has_text=re.compile(r"Trovat[oi] \d"))).to_be_visible()
    expect(done.locator("details.feed li", has_text="Cerco “")).to_be_visible()
    expect(done.locator(".answer")).to_contain_text("Ecco cosa dice la base di conoscenza")
    expect(page.locator("#composer button.send")).to_have_text("Invia")

    # Reopened later, on a browser that prefers English: still Italian.
    page.reload()
    expect(page.locator("html")).to_have_attribute("lang", "it")
    expect(page.locator("details.feed > summary").last).to_contain_text("Ha cercato")
    page.locator("details.feed > summary").last.click()
    expect(page.locator("details.feed li .duration").first).to_have_text(re.compile(r"\d,\d s"))


def test_a_chinese_browser_gets_traditional_chinese(browser, glassbox_server):
    with new_user_in_browser(browser, glassbox_server, "meiling", "zh-TW") as page:
        chinese_turn(page)


def chinese_turn(page) -> None:
    expect(page.locator("h1")).to_have_text("你的對話")
    start_new(page)
    page.fill("#question", "我該如何進行薪資談判？")
    page.click("#composer button.send")
    done = page.locator("article.assistant.state-complete")
    summary = done.locator("details.feed > summary")
    expect(summary).to_have_text(re.compile("搜尋了知識庫"))
    summary.click()
    expect(done.locator("details.feed li", has_text="找到")).to_be_visible()
    expect(done.locator(".answer")).to_contain_text("以下是知識庫中的相關內容")
    expect(page.locator("#question")).to_have_attribute("placeholder", re.compile("提出問題"))


def test_the_live_feed_speaks_the_pages_language_whatever_the_socket_handshake_sends(
    browser, glassbox_server
):
    """The page is rendered in Chinese, but the browser's socket handshake asks for English:
    every line and the folded summary follow the page."""
    with new_user_in_browser(browser, glassbox_server, "wenhua", "en-US") as page:
        new_conversation(page, glassbox_server[0])

        def in_chinese(route):
            headers = {**route.request.headers, "accept-language": "zh-TW,zh;q=0.9"}
            route.continue_(headers=headers)

        # Only the page's own request: the socket's handshake keeps the browser's English.
        page.route(page.url, in_chinese)
        page.goto(page.url)
        expect(page.locator("html")).to_have_attribute("lang", "zh-hant")
        page.fill("#question", "bonus")
        page.click("#composer button.send")
        done = page.locator("article.assistant.state-complete")
        expect(done.locator("details.feed > summary")).to_have_text(re.compile("搜尋了知識庫"))
        expect(done.locator(".answer")).to_contain_text("以下是知識庫中的相關內容")
