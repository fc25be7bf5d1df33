"""Connecting an MCP server in the browser: the turn's line shows a "Connect notes" button,
which opens the authorization server's consent page in a new tab, the user grants, and the
same turn finishes with the tool's answer, acting for that user. On a desktop and on a phone
(each as a user of their own: a user connects once)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.support.browser import DEVICES, DONE, TOUCH_TARGET, ask, log_in, new_conversation
from tests.support.oauth import oauth_server
from tests.support.ports import free_port
from tests.support.servers import manage, serve

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def oauth_site(tmp_path_factory):
    """A Glassbox whose users each connect to an OAuth MCP server of its own; besides the
    demo user, one per device (named after it, password the same)."""
    with oauth_server() as spec:
        port = free_port()
        declared = json.dumps([{"name": spec.name, "url": spec.url, "auth": "oauth"}])
        with serve(
            tmp_path_factory.mktemp("oauth"),
            port=port,
            GLASSBOX_MCP_SERVERS=declared,
            GLASSBOX_OAUTH_REDIRECT_URL=f"http://127.0.0.1:{port}/accounts/connections/callback/",
        ) as server:
            users = "; ".join(f"User.objects.create_user({d!r}, password={d!r})" for d in DEVICES)
            manage(
                server.env,
                "shell",
                "-c",
                f"from django.contrib.auth.models import User; {users}",
            )
            yield server.url


@pytest.fixture(params=list(DEVICES))
def device_page(request, browser):
    context = browser.new_context(**DEVICES[request.param])
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.device = request.param
    yield page
    context.close()


def test_the_connect_button_opens_the_consent_and_the_turn_answers_with_the_servers_tool(
    device_page, oauth_site
):
    page, person = device_page, f"{device_page.device}@notes"
    log_in(page, oauth_site, page.device, page.device)
    new_conversation(page, oauth_site)
    ask(page, "notes__whoami {}")

    line = page.locator("details.feed li", has_text="Connect to notes")
    expect(line).to_contain_text("it asks for: notes:read")
    button = line.get_by_role("link", name="Connect notes")
    expect(button).to_have_class("connect button")
    box = button.bounding_box()
    assert box is not None
    if page.device == "phone":
        assert box["height"] >= TOUCH_TARGET, box
    with page.context.expect_page() as opened:
        button.click()
    consent = opened.value
    consent.fill('input[name="person"]', person)
    consent.click('button[value="grant"]')
    expect(consent.locator("h1")).to_have_text("Connected to notes")

    # The same turn goes on with the server's tool, and its answer is the tool's: not a word
    # about failing to use the tool that opened the server.
    answer = page.locator(f"{DONE} .answer")
    expect(answer).to_contain_text(f'The tool notes__whoami answered: "you are {person}"')
    expect(answer).not_to_contain_text("could not")
    page.goto(f"{oauth_site}/accounts/connections/")
    expect(page.locator("#connection-notes")).to_contain_text("notes:read")
