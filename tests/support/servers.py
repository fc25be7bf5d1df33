"""Real Glassbox servers for tests: a fresh SQLite database and Daphne processes."""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
# The limits `make run` and the deployment guide give Daphne.
DAPHNE_LIMITS = ["--websocket-max-message-size", "65536", "--websocket-max-frame-size", "65536"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(work: Path, **settings: str) -> Iterator[Server]:
    """Migrates a fresh database in `work`, seeds the demo, and starts Daphne; stopped on the
    way out, whether the test passed or not."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": f"sqlite:///{work / 'e2e.sqlite3'}",
        "STATIC_ROOT": str(work / "static"),
        "GLASSBOX_DEMO_DELAY": "0.005",
        "OPENAI_API_KEY": "",
        # One demo user asks every browser test's questions within a minute or two.
        "GLASSBOX_TURNS_PER_MINUTE": "1000",
        **settings,
    }
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"], ["seed_demo"]):
        manage(env, *command, "-v", "0")
    server = start_daphne(env)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Server:
    url: str
    env: dict[str, str]
    process: subprocess.Popen
    log: IO[bytes]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.log.close()


def manage(env: dict[str, str], *command: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *command],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout


def start_daphne(env: dict[str, str], asgi: str = "project.asgi:application") -> Server:
    """A Daphne process on a free port, once it accepts connections."""
    port = free_port()
    # A file, not a pipe: a pipe nobody reads fills up and blocks the server.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by Server.stop
    daphne = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), *DAPHNE_LIMITS,
         asgi],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if daphne.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                problem = log.read().decode()
                raise RuntimeError(f"Daphne did not start: {problem}") from None
            time.sleep(0.1)
    return Server(f"http://127.0.0.1:{port}", env, daphne, log)


def login(url: str) -> tuple[str, str]:
    """Logs in as the demo user like a browser; a new conversation and the cookies."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{url}/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode(
        {"username": "demo", "password": "demo", "csrfmiddlewaretoken": token}
    ).encode()
    opener.open(urllib.request.Request(f"{url}/accounts/login/", data=form,
                                       headers={"Referer": f"{url}/accounts/login/"}))  # fmt: skip
    # Logging in rotates the CSRF token: use the new one from its cookie.
    token = next(c.value for c in jar if c.name == "csrftoken")
    new = opener.open(urllib.request.Request(f"{url}/c/new/", data=b"",
                                             headers={"X-CSRFToken": token}))  # fmt: skip
    conversation = new.geturl().rstrip("/").split("/")[-1]
    cookies = "; ".join(f"{c.name}={c.value}" for c in jar)
    return conversation, cookies
