"""MCP Apps in Chromium, with a server built with the SDK's `Apps` over streamable HTTP: the
app renders under its call's line and speaks with the page's bridge, a hostile app cannot
leave its frame, and the app reopens from history with its server stopped."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support import ext_apps
from tests.support.browser import DEVICES, DONE, ask, log_in, new_conversation
from tests.support.mcp import BENCH, http_server
from tests.support.servers import serve

pytestmark = pytest.mark.e2e

APPS = "tests.support.apps_server"
APP = ".mcp-app"


@contextlib.contextmanager
def glassbox_with_charts(
    work: Path, approval: str = ""
) -> Iterator[tuple[str, Callable[[], None]]]:
    """(Glassbox's URL, a way to stop the charts server): the charts server over HTTP, and
    the test bench over stdio (the other server a hostile app reaches for)."""
    charts = http_server(APPS)
    charts_url = charts.__enter__()
    stopped: list[bool] = []

    def stop() -> None:
        if not stopped:
            stopped.append(True)
            charts.__exit__(None, None, None)

    with contextlib.ExitStack() as stack:
        stack.callback(stop)
        declared = json.dumps(
            [
                {"name": "charts", "url": charts_url},
                {"name": "bench", "command": sys.executable, "args": ["-m", BENCH]},
            ]
        )
        server = stack.enter_context(
            serve(work, GLASSBOX_MCP_SERVERS=declared, GLASSBOX_APPROVAL=approval)
        )
        yield server.url, stop


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    with glassbox_with_charts(tmp_path_factory.mktemp("apps")) as running:
        yield running


@pytest.fixture
def charts_to_stop(tmp_path):
    with glassbox_with_charts(tmp_path) as running:
        yield running


def opened(browser, url: str, device: str = "desktop") -> Page:
    context = browser.new_context(**DEVICES[device])
    context.set_default_timeout(20_000)
    page = context.new_page()
    log_in(page, url)
    new_conversation(page, url)
    return page


def frame_of(page: Page):
    return page.frame_locator(f"{DONE} {APP} iframe")


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_an_app_renders_under_its_line_with_the_calls_input_and_result(charts, browser, device):
    page = opened(browser, charts[0], device)
    ask(page, 'charts__show_chart {"role": "engineer"}')

    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()
    line = page.locator(f"{DONE} details.feed li.line", has=page.locator(APP))
    expect(line).to_contain_text("Salary chart")
    frame = frame_of(page)
    expect(frame.locator("#host")).to_have_text(
        "theme light, locale en; offers message serverTools updateModelContext"
    )
    expect(frame.locator("#input")).to_have_text('{"role":"engineer"}')
    expect(frame.locator("#result")).to_have_text("Chart of engineer salaries (with its app)")
    # Sized by the app's own notification, within the page's width.
    box = page.locator(f"{DONE} {APP} iframe").bounding_box()
    assert box is not None and box["height"] == 180
    assert box["width"] <= DEVICES[device]["viewport"]["width"]
    page.locator(f"{DONE} {APP} .app-full-screen").click()
    full = page.locator(f"{DONE} {APP} iframe").bounding_box()
    assert full is not None and full["height"] > 180
    page.keyboard.press("Escape")
    page.context.close()


def test_a_hostile_app_reads_nothing_of_the_page_and_reaches_no_other_server(charts, browser):
    page = opened(browser, charts[0])
    ask(page, "charts__hostile_view {}")

    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()
    frame = frame_of(page)
    expect(frame.locator("#done")).to_be_visible()
    expect(frame.locator("#parent-document")).to_have_text("parent-document: blocked")
    expect(frame.locator("#cookie")).to_have_text("cookie: blocked")
    expect(frame.locator("#fetch")).to_have_text("fetch: blocked")
    expect(frame.locator("#other-server")).to_have_text(
        "other-server: refused: charts has no tool bench__echo that its app may call"
    )
    # The flood was cut at the bridge's rate, the oversized message dropped, and the frame
    # kept to its bound however tall the app asked to be.
    box = page.locator(APP)
    expect(box).to_have_attribute("data-dropped", re.compile(r"^([4-9]\d\d|\d{4,})$"))
    height = page.locator(f"{APP} iframe").bounding_box()
    assert height is not None and height["height"] <= 1600
    assert page.evaluate("document.cookie") != "", "the page itself still has its session"
    page.context.close()


def test_an_app_reopens_from_history_with_its_server_stopped(charts_to_stop, browser):
    url, stop = charts_to_stop
    page = opened(browser, url)
    ask(page, 'charts__show_chart {"role": "designer"}')
    expect(page.locator(DONE)).to_be_visible()

    stop()
    page.reload()
    page.locator(f"{DONE} details.feed > summary").click()
    frame = frame_of(page)
    expect(frame.locator("#input")).to_have_text('{"role":"designer"}')
    expect(frame.locator("#result")).to_have_text("Chart of designer salaries (with its app)")
    page.context.close()


def test_an_apps_own_call_answers_it_and_stays_in_the_feed_marked_as_the_apps(charts, browser):
    page = opened(browser, charts[0])
    ask(page, 'charts__show_chart {"role": "analyst"}')
    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()

    frame_of(page).locator("#refresh").click()

    expect(frame_of(page).locator("#refreshed")).to_have_text("Refreshed 3 months")
    page.reload()
    page.locator(f"{DONE} details.feed > summary").click()
    expect(page.locator(f"{DONE} details.feed li.line", has_text="From the app:")).to_contain_text(
        "“Refresh the chart” finished"
    )
    page.context.close()


@pytest.fixture
def charts_asking_first(tmp_path):
    asks = json.dumps({"charts__refresh_chart": True})
    with glassbox_with_charts(tmp_path, asks) as running:
        yield running


def test_an_apps_call_that_asks_first_waits_for_its_card_and_approving_answers_the_app(
    charts_asking_first, browser
):
    page = opened(browser, charts_asking_first[0])
    ask(page, 'charts__show_chart {"role": "analyst"}')
    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()

    frame_of(page).locator("#refresh").click()

    card = page.locator(f"{DONE} section.approval-card")
    expect(card.locator("h3")).to_have_text("⏸ Approve “Refresh the chart”?")
    expect(frame_of(page).locator("#refreshed")).to_have_text("")
    card.locator("button.approve").click()
    expect(frame_of(page).locator("#refreshed")).to_have_text("Refreshed 3 months")
    expect(card).to_have_count(0)
    page.reload()
    page.locator(f"{DONE} details.feed > summary").click()
    # Its waiting line became the call's done line, as a model's call's does.
    expect(page.locator(f"{DONE} details.feed li.line", has_text="From the app:")).to_contain_text(
        ["“Refresh the chart” finished"]
    )
    page.context.close()


@pytest.fixture(scope="module")
def forecast(tmp_path_factory):
    """Glassbox with the server built with @modelcontextprotocol/ext-apps (its App class)."""
    declared = json.dumps([ext_apps.declared("forecast")])
    with serve(tmp_path_factory.mktemp("ext-apps"), GLASSBOX_MCP_SERVERS=declared) as server:
        yield server.url


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_an_app_built_with_ext_apps_renders_and_calls_its_server_through_glassbox(
    forecast, browser, device
):
    page = opened(browser, forecast, device)
    ask(page, 'forecast__show_forecast {"city": "Rome"}')
    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()

    frame = frame_of(page)
    expect(frame.locator("#host")).to_have_text("connected to Glassbox, theme light")
    expect(frame.locator("#input")).to_have_text('{"city":"Rome"}')
    expect(frame.locator("#result")).to_have_text("Sunny in Rome")
    frame.locator("#again").click()
    expect(frame.locator("#again-result")).to_have_text("Still sunny in Rome")
    page.context.close()


def test_an_apps_message_waits_in_the_composer_for_its_person_to_send(charts, browser):
    page = opened(browser, charts[0])
    ask(page, 'charts__show_chart {"role": "engineer"}')
    expect(page.locator(DONE)).to_be_visible()
    page.locator(f"{DONE} details.feed > summary").click()

    with page.expect_response(lambda response: response.url.endswith("/note/")) as kept:
        frame_of(page).locator("#ask").click()

    expect(page.locator("#question")).to_have_value("Explain this chart")
    expect(page.locator("article.assistant")).to_have_count(1)
    # Proposed, not sent: the feed keeps what the app said all the same.
    assert kept.value.status == 201
    exported = page.evaluate(
        "fetch('/api/feeds/export/?format=ndjson').then((response) => response.text())"
    )
    feeds = [json.loads(line) for line in exported.splitlines()]
    notes = [e for feed in feeds for e in feed["events"] if e["type"] == "app_note"]
    assert ("message", "Explain this chart") in [(n["note"], n["text"]) for n in notes]
    page.context.close()
