"""Connecting an MCP server in the browser: the turn's line says "Connect to …", its link
opens the authorization server's consent page in a new tab, the user grants, and the same
turn finishes with the tool's answer, acting for that user."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.e2e.test_turn_in_browser import DONE, ask
from tests.support.browser import log_in, new_conversation
from tests.support.oauth import oauth_server
from tests.support.servers import free_port, serve

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def oauth_site(tmp_path_factory):
    """A Glassbox whose users each connect to an OAuth MCP server of its own."""
    with oauth_server() as spec:
        port = free_port()
        declared = json.dumps([{"name": spec.name, "url": spec.url, "auth": "oauth"}])
        with serve(
            tmp_path_factory.mktemp("oauth"),
            port=port,
            GLASSBOX_MCP_SERVERS=declared,
            GLASSBOX_OAUTH_REDIRECT_URL=f"http://127.0.0.1:{port}/accounts/connections/callback/",
        ) as server:
            yield server.url


def test_the_connect_line_opens_the_consent_and_the_turn_goes_on_to_the_tools_answer(
    page, oauth_site
):
    log_in(page, oauth_site)
    new_conversation(page, oauth_site)
    ask(page, "notes__whoami {}")

    line = page.locator("details.feed li", has_text="Connect to notes")
    expect(line).to_contain_text("it asks for: notes:read")
    with page.context.expect_page() as opened:
        line.locator("a.connect").click()
    consent = opened.value
    consent.fill('input[name="person"]', "demo@notes")
    consent.click('button[value="grant"]')
    expect(consent.locator("h1")).to_have_text("Connected to notes")

    expect(page.locator(f"{DONE} .answer")).to_contain_text("you are demo@notes")
    page.goto(f"{oauth_site}/accounts/connections/")
    expect(page.locator("#connection-notes")).to_contain_text("notes:read")
