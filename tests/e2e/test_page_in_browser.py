"""The page a person uses, in real Chromium at 1280 by 800 and on a 390 by 844 phone (mobile
emulation: touch, `is_mobile`): no sideways scrolling, controls big enough for a finger, the
sidebar and its search, a new conversation that invites and stores nothing until asked, one
Stop (and Esc), the composer's focus, the dark theme, and axe-core with no violation at all."""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.support.browser import (
    DESKTOP,
    PHONE,
    console_errors,
    log_in,
    new_conversation,
    open_menu,
    start_new,
    watch_console,
)

pytestmark = pytest.mark.e2e

DONE = "article.assistant.state-complete"
# Every control a finger aims at; links inside running text are not among them.
CONTROLS = (
    "button, .button, input:not([type=hidden], [type=checkbox], [type=radio]), select, "
    "textarea, summary, .topbar a, .sidebar-list a, .menu-panel a"
)
SMALL_CONTROLS = f"""() => [...document.querySelectorAll({CONTROLS!r})]
  .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 0)
  .filter(e => e.getBoundingClientRect().height < 44)
  .map(e => `${{e.tagName}}.${{e.className}} “${{e.textContent.trim().slice(0, 30)}}”`)"""
SIDEWAYS = "document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(params=["desktop", "phone"])
def screen(request, browser, live_server_url):
    context = browser.new_context(**(PHONE if request.param == "phone" else DESKTOP))
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.kind = request.param
    watch_console(page)
    log_in(page, live_server_url)
    yield page
    context.close()


@pytest.fixture
def phone(browser, live_server_url):
    context = browser.new_context(**PHONE)
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, live_server_url)
    yield page
    context.close()


def violations(page) -> list[str]:
    """axe-core's violations of every impact, minor and moderate included."""
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {', '.join(str(n['target'][0]) for n in v['nodes'][:3])}"
        for v in results.response["violations"]
    ]


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.click("#composer button.send")


def tap(page, selector: str) -> None:
    """A tap on a phone, a click on a desktop."""
    if page.kind == "phone":
        page.locator(selector).first.tap()
    else:
        page.locator(selector).first.click()


def switch_language(page, code: str) -> None:
    open_menu(page)
    page.click(f".language-switcher button[lang={code}]")
    expect(page.locator("html")).to_have_attribute("lang", code)


def test_every_page_fits_the_screen_in_every_language_with_no_axe_violation(
    screen, live_server_url
):
    page = screen
    new_conversation(page, live_server_url)
    ask(page, "How do I negotiate my salary?")
    expect(page.locator(DONE)).to_be_visible()
    conversation = page.url
    pages = [
        conversation,
        f"{live_server_url}/",
        f"{live_server_url}/c/new/",
        f"{live_server_url}/inbox/",
        f"{live_server_url}/preferences/",
        f"{live_server_url}/accounts/connections/",
        f"{live_server_url}/accounts/token/",
    ]
    try:
        for language in ("en", "it", "zh-hant"):
            if language != "en":
                switch_language(page, language)
            for url in pages:
                page.goto(url)
                assert page.evaluate(SIDEWAYS) <= 0, (language, url)
                if page.kind == "phone":
                    assert page.evaluate(SMALL_CONTROLS) == [], (language, url)
                if language == "en":
                    assert violations(page) == [], url
    finally:  # the demo user's saved language is every later test's
        if page.locator("html").get_attribute("lang") != "en":
            switch_language(page, "en")
    # The feed expanded and the header's menu open have nothing to report either.
    page.goto(conversation)
    page.locator(f"{DONE} details.feed > summary").click()
    open_menu(page)
    assert violations(page) == []
    assert console_errors(page) == []


def test_the_login_page_fits_a_phone_with_no_axe_violation(browser, live_server_url):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.goto(f"{live_server_url}/accounts/login/")
    assert page.evaluate(SIDEWAYS) <= 0
    assert page.evaluate(SMALL_CONTROLS) == []
    assert violations(page) == []
    context.close()


def test_a_starter_sends_its_prompt_and_the_conversation_is_made_only_then(
    screen, live_server_url
):
    page = screen
    start_new(page)
    listed_before = page.locator("#sidebar-list li").count()
    start_new(page)  # a second New conversation stores nothing either
    expect(page.locator("#sidebar-list li")).to_have_count(listed_before)
    expect(page.locator("#question")).to_be_focused()
    starters = page.locator("button.starter")
    assert 3 <= starters.count() <= 6
    tap(page, "button.starter:has-text('Compare five salary surveys')")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator("article.user .bubble")).to_have_text(
        "Compare five salary surveys for an engineer"
    )
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} details.feed > summary")).to_contain_text(
        "Compare salary surveys"
    )
    expect(page.locator("button.starter")).to_have_count(0)
    # The new conversation is listed, marked as the one open, under Today.
    current = page.locator("#sidebar-list a[aria-current=page]")
    expect(current).to_have_text(re.compile("Compare five salary surveys"))
    expect(page.locator("#sidebar-list .sidebar-group").first).to_have_text("Today")


def test_the_composer_keeps_the_focus_and_enter_shift_enter_and_esc_do_what_they_say(
    page, live_server_url
):
    log_in(page, live_server_url)
    new_conversation(page, live_server_url)
    box = page.locator("#question")
    expect(box).to_be_focused()
    box.type("First line")
    page.keyboard.press("Shift+Enter")
    box.type("second line")
    expect(box).to_have_value("First line\nsecond line")
    page.keyboard.press("Enter")
    expect(page.locator(DONE)).to_be_visible()
    assert page.locator("article.user .bubble").inner_text() == "First line\nsecond line"

    page.fill("#question", "Compare salary negotiation and interview preparation")
    page.click("#composer button.send")
    expect(box).to_be_focused()  # the click on Send leaves the focus where the typing is
    stop = page.locator("button:visible", has_text="Stop")
    expect(stop).to_have_count(1)  # one Stop, in the composer
    expect(page.locator("#composer .stop-turn")).to_be_visible()
    page.keyboard.press("Escape")
    stopped = page.locator("article.assistant.state-stopped")
    expect(stopped).to_be_visible()
    note = stopped.locator(".state-note")
    expect(note).to_contain_text("Stopped")
    # Stopped is not failed: a neutral note, and one way to try again.
    assert "interrupted" not in note.inner_text() and "failed" not in note.inner_text()
    again = stopped.locator("button:visible", has_text=re.compile("Retry|Regenerate"))
    expect(again).to_have_count(1)
    expect(page.locator("#composer .send")).to_be_visible()


def test_the_sidebar_search_shows_what_matched_and_the_list_follows_other_tabs(
    screen, live_server_url
):
    page = screen
    new_conversation(page, live_server_url)
    ask(page, "What time is it, and how do I prepare for an interview?")
    expect(page.locator(DONE)).to_be_visible()
    if page.kind == "phone":
        expect(page.locator("#sidebar")).to_be_hidden()
        tap(page, "#sidebar-toggle")
    sidebar = page.locator("#sidebar")
    expect(sidebar).to_be_visible()
    assert page.evaluate(SIDEWAYS) <= 0
    if page.kind == "phone":
        assert violations(page) == []  # the drawer open
    page.fill("#sidebar-q", "prepare")
    first = page.locator("#sidebar-list li").first
    expect(first.locator(".snippet mark").first).to_have_text(re.compile("prepare", re.I))
    page.fill("#sidebar-q", "")
    expect(page.locator("#sidebar-list .sidebar-group").first).to_have_text("Today")

    # Another tab starts a conversation: this page's list shows it without a reload.
    other = page.context.new_page()
    other.goto(f"{live_server_url}/c/new/")
    other.fill("#question", "Tell me a joke about sidebars")
    other.click("#composer button.send")
    expect(other).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator("#sidebar-list li").first).to_contain_text("Tell me a joke about sidebars")
    other.close()

    # The drawer closes with Esc on a phone; the list is a link away on a desktop.
    if page.kind == "phone":
        page.keyboard.press("Escape")
        expect(sidebar).to_be_hidden()
    else:
        tap(page, "#sidebar-toggle")  # collapsed, and remembered
        expect(sidebar).to_be_hidden()
        page.reload()
        expect(sidebar).to_be_hidden()
        tap(page, "#sidebar-toggle")
        expect(sidebar).to_be_visible()


def test_the_composer_stays_on_screen_after_a_long_expanded_answer_on_a_phone(
    phone, live_server_url
):
    page = phone
    new_conversation(page, live_server_url)
    ask(page, "Compare salary negotiation and interview preparation")
    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").tap()
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.locator("#question")).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollHeight") > 844  # it did scroll


def test_the_dark_theme_follows_the_system_and_the_menus_toggle_keeps_the_choice(
    browser, live_server_url
):
    context = browser.new_context(**DESKTOP, color_scheme="dark")
    page = context.new_page()
    log_in(page, live_server_url)
    background = "getComputedStyle(document.body).backgroundColor"

    def brightness() -> int:
        return sum(int(n) for n in re.findall(r"\d+", page.evaluate(background))[:3])

    assert brightness() < 150  # dark, as the system asks
    page.goto(f"{live_server_url}/c/new/")
    assert violations(page) == []
    open_menu(page)
    page.click(".theme-toggle")  # the reader's choice wins over the system's
    assert brightness() > 600
    page.reload()
    assert brightness() > 600
    open_menu(page)
    expect(page.locator(".theme-toggle")).to_have_text("Dark theme")
    page.click(".theme-toggle")
    assert brightness() < 150
    context.close()


FOCUS_SHOWN = """() => {
  const style = getComputedStyle(document.activeElement);
  return style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2;
}"""


def tab_to(page, selector: str, limit: int = 80) -> None:
    """Presses Tab until `selector` has the focus, as a keyboard user would."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_ask_approve_stop_and_regenerate_with_the_keyboard_alone(page, live_server_url):
    log_in(page, live_server_url)
    new_conversation(page, live_server_url)
    expect(page.locator("#question")).to_be_focused()
    page.keyboard.type("Email advisor@example.com: can we meet on Tuesday?")
    page.keyboard.press("Enter")
    card = page.locator("section.approval-card")
    expect(card).to_be_visible()
    tab_to(page, "section.approval-card button.approve")
    assert page.evaluate(FOCUS_SHOWN)  # the focus is seen, not only there
    page.keyboard.press("Enter")
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} details.feed")).to_contain_text("Approved by demo")

    tab_to(page, "#question")
    page.keyboard.type("Compare salary negotiation and interview preparation")
    page.keyboard.press("Enter")
    expect(page.locator("article.assistant.state-streaming")).to_be_visible()
    # The streaming answer stays a polite live region; the page's one announcer too.
    expect(page.locator("article.assistant.state-streaming ol.lines")).to_have_attribute(
        "aria-live", "polite"
    )
    expect(page.locator("#announcer")).to_have_attribute("aria-live", "polite")
    page.keyboard.press("Escape")
    expect(page.locator("article.assistant.state-stopped")).to_be_visible()

    tab_to(page, "article.assistant.state-stopped form.regenerate button")
    assert page.evaluate(FOCUS_SHOWN)
    page.keyboard.press("Enter")
    expect(page.locator("article.superseded.state-stopped")).to_be_attached()
    expect(page.locator(DONE)).to_have_count(2)
