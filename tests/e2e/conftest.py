"""A real Daphne process serving Glassbox with its own SQLite database, and headless Chromium
driving it through Playwright. Without Chromium the browser tests are skipped with a visible
reason, unless REQUIRE_BROWSER=1 (set by .ci/run), which makes them required."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(work: Path, **settings: str):
    """Migrates a fresh database, seeds the demo, and starts Daphne; yields its URL."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": f"sqlite:///{work / 'e2e.sqlite3'}",
        "STATIC_ROOT": str(work / "static"),
        "GLASSBOX_DEMO_DELAY": "0.005",
        "OPENAI_API_KEY": "",
        **settings,
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"], ["seed_demo"]):
        subprocess.run([*manage, *command, "-v", "0"], env=env, cwd=ROOT, check=True)
    port = free_port()
    daphne = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "project.asgi:application"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if daphne.poll() is not None or time.monotonic() > deadline:
                problem = daphne.stderr.read().decode()
                raise RuntimeError(f"Daphne did not start: {problem}") from None
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}", env
    daphne.terminate()
    daphne.wait(timeout=10)


@pytest.fixture(scope="session")
def glassbox_server(tmp_path_factory):
    """(url, environment) of a Glassbox serving the demo; the environment reaches its
    database for management commands."""
    yield from serve(tmp_path_factory.mktemp("e2e"))


@pytest.fixture(scope="session")
def live_server_url(glassbox_server):
    return glassbox_server[0]


@pytest.fixture(scope="session")
def hostile_server_url(tmp_path_factory):
    """Glassbox talking to an OpenAI-compatible provider whose model writes attacks."""
    from tests.e2e.hostile_provider import HostileProvider

    with HostileProvider() as provider:
        for url, _ in serve(
            tmp_path_factory.mktemp("hostile"),
            OPENAI_API_KEY="sk-hostile",
            OPENAI_BASE_URL=provider.url,
            GLASSBOX_MODEL="hostile-model",
        ):
            yield url


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail("REQUIRE_BROWSER=1 but Debian's chromium is not installed")
        pytest.skip("chromium is not installed (apt-get install chromium); browser tests skipped")
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
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 1000})
    context.set_default_timeout(20_000)
    page = context.new_page()
    yield page
    context.close()
