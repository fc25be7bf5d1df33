"""server-everything's request to use the model, in the page: the card shows what the server
asks, the person approves it (with an edit) or denies it, and the server's tool says what it
got; the card says who decided."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.support.browser import (
    DONE,
    ask,
    console_errors,
    log_in,
    new_conversation,
    watch_console,
)
from tests.support.everything import everything
from tests.support.servers import serve

pytestmark = pytest.mark.e2e

ASK = 'everything__trigger-sampling-request {"prompt": "a haiku about rain"}'


@pytest.fixture(scope="module")
def sampling_site(tmp_path_factory):
    """A Glassbox whose one MCP server, server-everything, is declared with sampling."""
    spec = everything(sampling=True)
    declared = json.dumps(
        [{"name": spec.name, "command": spec.command, "args": list(spec.args), "sampling": True}]
    )
    with serve(tmp_path_factory.mktemp("sampling"), GLASSBOX_MCP_SERVERS=declared) as server:
        yield server.url


@pytest.fixture
def sampling_page(page, sampling_site):
    watch_console(page)
    log_in(page, sampling_site)
    new_conversation(page, sampling_site)
    return page


def test_a_person_approves_an_edited_request_and_the_server_gets_the_models_answer(
    sampling_page,
):
    page = sampling_page
    ask(page, ASK)

    card = page.locator("#questions section.question.sampling")
    expect(card).to_contain_text("The everything server asks to use the model")
    expect(card.locator(".deadline time")).to_be_visible()
    expect(card.locator(".sampling-max-tokens")).to_have_text("100")
    expect(card.get_by_label("System prompt")).to_have_value("You are a helpful test server.")
    message = card.get_by_label("User")
    expect(message).to_have_value("Resource trigger-sampling-request context: a haiku about rain")
    message.fill("A haiku about snow")
    card.get_by_role("button", name="Approve").click()

    expect(page.locator(DONE)).to_be_visible()
    answer = page.locator(f"{DONE} .answer")
    expect(answer).to_contain_text("LLM sampling result")
    expect(answer).to_contain_text("A haiku about snow")
    expect(card).to_contain_text("Approved with edits by demo")
    expect(card.locator("form")).to_have_count(0)
    assert console_errors(page) == []


def test_a_person_denies_a_request_and_the_server_is_refused(sampling_page):
    page = sampling_page
    ask(page, ASK)

    card = page.locator("#questions section.question.sampling")
    card.get_by_role("button", name="Deny").click()

    expect(page.locator(DONE)).to_be_visible()
    expect(card).to_contain_text("Denied by demo")
    expect(page.locator(f"{DONE}")).to_contain_text("The user denied the request")
    expect(card.locator("form")).to_have_count(0)
    assert console_errors(page) == []
