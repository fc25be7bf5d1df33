"""Watching served processes from a test: a supervisor's workers, a condition awaited with a
deadline, and an admin's logged-in browser session."""

from __future__ import annotations

import http.cookiejar
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

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


def wait_until_healthy(
    name: str, url: str, seconds: float, process: subprocess.Popen | None, log: Path | None
) -> None:
    """Until `url` answers 200; fails the test saying why if the process (when the test
    started it) stops first, with the end of its log, or when `seconds` are up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and log is not None and process.poll() is not None:
            pytest.fail(f"{name} stopped: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(f"{name} did not start in {seconds:g} s")


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
