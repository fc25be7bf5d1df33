"""Connecting a user to the OAuth test server (tests.support.oauth_server) as their browser
would: the turn's link, the authorization server's consent page, and the way back to
Glassbox's callback."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx2

from chat.agent.mcp.config import ServerSpec, spec_from_mapping
from tests.support.mcp import http_server

MODULE = "tests.support.oauth_server"


@contextlib.contextmanager
def oauth_server(name: str = "notes", **env: str) -> Iterator[ServerSpec]:
    """The server on a free port, declared as one each user connects to."""
    with http_server(MODULE, environment=env) as url:
        yield spec_from_mapping({"name": name, "url": url, "auth": "oauth"})


def consent(client, server: str, *, person: str, decision: str = "grant"):
    """Opens the turn's link as the user logged in to `client` (a Django test client),
    answers the consent page as `person`, and brings the answer back: the callback's
    response."""
    link = client.get(f"/accounts/connections/{server}/authorize/")
    assert link.status_code == 302, link.status_code
    with httpx2.Client(timeout=10) as browser:
        to_consent = browser.get(link["Location"])
        assert to_consent.status_code == 302, to_consent.text
        page = browser.get(to_consent.headers["location"])
        request = re.search(r'name="request" value="([^"]+)"', page.text)
        assert request is not None, page.text
        back = browser.post(
            str(page.url),
            data={"request": request.group(1), "person": person, "decision": decision},
        )
    assert back.status_code == 302
    answer = urlsplit(back.headers["location"])
    return client.get(f"{answer.path}?{answer.query}")
