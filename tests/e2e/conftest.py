"""A real Daphne process serving Glassbox with its own SQLite database, and headless Chromium
driving it through Playwright. Without Chromium the browser tests are skipped with a visible
reason, unless REQUIRE_BROWSER=1 (set by .ci/run), which makes them required."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest

from tests.support.browser import log_in, new_conversation, watch_console
from tests.support.mcp import DEMO, stdio
from tests.support.servers import serve

# Chromium's headless shell: the same Blink and V8 without the desktop browser around them,
# which Playwright runs headless by default too. It costs the browser tests less than half the
# CPU of the full browser in its headless mode; the full one is taken when it is all there is.
CHROMIUM = next(
    filter(None, map(shutil.which, ("chromium-headless-shell", "chromium", "chromium-browser"))),
    None,
)


@pytest.fixture(scope="session")
def glassbox_server(tmp_path_factory):
    """(url, environment) of a Glassbox serving the demo; the environment reaches its
    database for management commands."""
    servers = [stdio("bench"), stdio("surveys", DEMO, GLASSBOX_DEMO_MCP_DELAY="0")]
    declared = json.dumps(
        [
            {"name": s.name, "command": s.command, "args": list(s.args), "env": s.env}
            for s in servers
        ]
    )
    with serve(tmp_path_factory.mktemp("e2e"), GLASSBOX_MCP_SERVERS=declared) as server:
        yield server.url, server.env


@pytest.fixture(scope="session")
def live_server_url(glassbox_server):
    return glassbox_server[0]


@pytest.fixture(scope="session")
def hostile_server_url(tmp_path_factory):
    """Glassbox talking to an OpenAI-compatible provider whose model writes attacks."""
    from tests.support.hostile_provider import HostileProvider

    with (
        HostileProvider() as provider,
        serve(
            tmp_path_factory.mktemp("hostile"),
            OPENAI_API_KEY="sk-hostile",
            OPENAI_BASE_URL=provider.url,
            GLASSBOX_MODEL="hostile-model",
        ) as server,
    ):
        yield server.url


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail("REQUIRE_BROWSER=1 but Debian's Chromium is not installed")
        pytest.skip(
            "Chromium is not installed (apt-get install chromium-headless-shell); "
            "browser tests skipped"
        )
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        # Marked running by Playwright; a test run after this one in the process may have
        # unmarked it (tests/conftest.py), and the browser closes through it.
        loop = asyncio.get_running_loop()
        yield browser
        if loop.is_running():  # not if the driver died and its dispatcher left the loop
            asyncio._set_running_loop(loop)
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 1000})
    context.set_default_timeout(20_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def conversation(page, live_server_url):
    """The page, logged in, on a new conversation, failing on any console error."""
    watch_console(page)
    log_in(page, live_server_url)
    new_conversation(page, live_server_url)
    return page
