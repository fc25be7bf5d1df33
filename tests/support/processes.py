"""Watching served processes from a test: a supervisor's workers, a condition awaited with a
deadline, and an admin's logged-in browser session."""

from __future__ import annotations

import http.cookiejar
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.support.matching import csrf_token


def children(pid: int) -> set[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return {int(child) for child in text.split()}


def wait_for(condition: Callable[[], object], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        time.sleep(0.1)


def admin_session(url: str, username: str, password: str) -> urllib.request.OpenerDirector:
    """An opener logged in to the admin, as a browser would be."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{url}/admin/login/").read().decode()
    token = csrf_token(page)
    form = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    opener.open(urllib.request.Request(
        f"{url}/admin/login/", data=urllib.parse.urlencode(form).encode(),
        headers={"Referer": f"{url}/admin/login/"},
    ))  # fmt: skip
    return opener
