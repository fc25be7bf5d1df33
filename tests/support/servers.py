"""Real Glassbox servers for tests: a fresh SQLite database and Daphne processes."""

from __future__ import annotations

import atexit
import contextlib
import datetime
import fcntl
import functools
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from tests.support.matching import csrf_token
from tests.support.ports import accepting

ROOT = Path(__file__).resolve().parents[2]
# The project's settings with a fast password hasher (tests/support/served_settings.py).
SERVED_SETTINGS = "tests.support.served_settings"
# The limits `make run` and the deployment guide give Daphne.
DAPHNE_LIMITS = ["--websocket-max-message-size", "65536", "--websocket-max-frame-size", "65536"]


# Set by tests/conftest.py in pytest's first process: a folder the whole run (every
# pytest-xdist worker) shares, for what the first process to need it builds once.
RUN_FOLDER = "GLASSBOX_TESTS_RUN_FOLDER"


def run_folder() -> Path | None:
    folder = os.environ.get(RUN_FOLDER)
    return Path(folder) if folder else None


def once_per_run(folder: Path, name: str, build: Callable[[], object]) -> None:
    """`build()` unless a process of this run already did (pytest-xdist's workers share the
    run's folder). The lock is held while one process builds: the others wait for it, then
    find it built; a failed build leaves nothing marked built, so the next process retries."""
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built(folder, name):
            build()
            (folder / f"{name}.built").touch()


def built(folder: Path, name: str) -> bool:
    return (folder / f"{name}.built").exists()


@functools.cache
def migrated_site() -> Path:
    """A SQLite database migrated and seeded with the demo, and the static files collected,
    once per test run (once per process outside pytest): each server starts from a copy (the
    three commands cost seconds, tens of seconds on a busy machine). Nothing writes to it."""
    folder = run_folder()
    if folder:
        site = folder / "site"
        once_per_run(folder, "site", lambda: build_site(site))
        return site
    site = Path(tempfile.mkdtemp(prefix="glassbox-site-"))
    atexit.register(shutil.rmtree, site, ignore_errors=True)
    build_site(site)
    return site


def build_site(site: Path) -> None:
    shutil.rmtree(site, ignore_errors=True)  # what a failed attempt left
    site.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SERVED_SETTINGS,
        "DATABASE_URL": f"sqlite:///{site / 'db.sqlite3'}",
        "STATIC_ROOT": str(site / "static"),
    }
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"], ["seed_demo"]):
        manage(env, *command, "-v", "0")


def copy_database(source: Path, target: Path) -> None:
    """Through SQLite's backup API: whatever its write-ahead log still holds comes along."""
    with (
        contextlib.closing(sqlite3.connect(source)) as original,
        contextlib.closing(sqlite3.connect(target)) as copy,
    ):
        original.backup(copy)


@contextlib.contextmanager
def serve(
    work: Path,
    daphne_args: tuple[str, ...] = (),
    port: int | None = None,
    *,
    mcp_opened: bool = True,
    seeded: bool = False,
    terminal: bool = False,
    **settings: str,
) -> Iterator[Server]:
    """Starts Daphne (with `daphne_args` besides its port, on `port` if given, as from a
    `terminal` if asked: see `start_daphne`) on a fresh database in `work`, migrated and
    seeded with the demo (a copy of `migrated_site`'s unless `settings` name a DATABASE_URL,
    migrated and seeded here unless `seeded` says it is), and, unless `mcp_opened` is False,
    waits for its first attempt at each MCP server it declares; stopped on the way out,
    whether the test passed or not."""
    site = migrated_site()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SERVED_SETTINGS,
        "DATABASE_URL": f"sqlite:///{work / 'e2e.sqlite3'}",
        # Read-only to the servers: one collection serves them all.
        "STATIC_ROOT": str(site / "static"),
        "GLASSBOX_DEMO_DELAY": "0.005",
        "OPENAI_API_KEY": "",
        # One demo user asks every browser test's questions within a minute or two.
        "GLASSBOX_TURNS_PER_MINUTE": "1000",
        # Servers of other tests share the Redis, with users and sessions of the same ids.
        "GLASSBOX_CHANNEL_PREFIX": f"test-{uuid.uuid4().hex[:8]}",
        **settings,
    }
    if "DATABASE_URL" in settings:
        for command in () if seeded else (["migrate", "--noinput"], ["seed_demo"]):
            manage(env, *command, "-v", "0")
    else:
        copy_database(site / "db.sqlite3", work / "e2e.sqlite3")
    server = start_daphne(env, args=daphne_args, port=port, terminal=terminal)
    try:
        if mcp_opened and env["DATABASE_URL"].startswith("sqlite:"):
            first_attempts(work / "e2e.sqlite3", env.get("GLASSBOX_MCP_SERVERS", ""))
        yield server
    except Exception:
        print(f"== What the server at {server.url} wrote:\n{server.said()[-20_000:]}")
        raise
    finally:
        server.stop()


def first_attempts(database: Path, declared: str, seconds: float = 60) -> None:
    """Until the process says (its sightings) that its first attempt at each declared server
    ended: until then a question needing one would be offered its connect tool instead of its
    tools (chat.agent.mcp.connect_tool), an extra call a test does not expect."""
    names = {
        server["name"]
        for server in (json.loads(declared) if declared.strip() else [])
        if server.get("auth") != "oauth" and server.get("enabled", True)
    }
    deadline = time.monotonic() + seconds
    with contextlib.closing(sqlite3.connect(database)) as connection:
        while names:
            query = "SELECT server FROM chat_mcpserversighting WHERE state != 'connecting'"
            names -= {row[0] for row in connection.execute(query)}
            if not names:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"no first attempt at {sorted(names)} within {seconds} s")
            time.sleep(0.05)


@dataclass
class Server:
    url: str
    env: dict[str, str]
    process: subprocess.Popen
    log: IO[bytes]

    def stop(self) -> None:
        """SIGTERM, which lets running turns finish (chat.turns.shutdown); SIGKILL after 10 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()

    def interrupt(self) -> None:
        """Ctrl+C, as a terminal sends it: SIGINT to the process group (of a server started
        with `terminal=True`)."""
        os.killpg(self.process.pid, signal.SIGINT)

    def output(self) -> str:
        """Everything it wrote, once it has exited."""
        assert self.process.poll() is not None
        return self.said()

    def said(self) -> str:
        """What it has written so far, read without moving the file's offset, which the
        process writes at; nothing once its log is closed."""
        if self.log.closed:
            return ""
        return os.pread(self.log.fileno(), 1 << 24, 0).decode(errors="replace")


def manage(env: dict[str, str], *command: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *command],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout


# The demo user's token, whichever database holds it.
DEMO_TOKEN = (
    "SELECT key FROM authtoken_token JOIN auth_user ON auth_user.id = user_id"
    " WHERE username = 'demo'"
)


def demo_token(env: dict[str, str]) -> str:
    """The demo user's API token in the database `env` names, written straight into it (a
    Django process to do it costs seconds on a busy machine)."""
    url, key = env["DATABASE_URL"], secrets.token_hex(20)
    if url.startswith("sqlite:///"):
        made = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)) as db:
            with db:
                db.execute(
                    "INSERT OR IGNORE INTO authtoken_token (key, created, user_id)"
                    " SELECT ?, ?, id FROM auth_user WHERE username = 'demo'",
                    (key, made),
                )
            row = db.execute(DEMO_TOKEN).fetchone()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute(
                "INSERT INTO authtoken_token (key, created, user_id)"
                " SELECT %s, now(), id FROM auth_user WHERE username = 'demo'"
                " ON CONFLICT DO NOTHING",
                (key,),
            )
            row = pg.execute(DEMO_TOKEN).fetchone()
    assert row is not None, "no demo user to make a token for"
    return row[0]


def start_daphne(
    env: dict[str, str],
    asgi: str = "project.asgi:application",
    args: tuple[str, ...] = (),
    port: int | None = None,
    seconds: float = 120,
    *,
    terminal: bool = False,
) -> Server:
    """A Daphne process on a port of its own choosing (or this one), once it listens (within
    `seconds`). From a `terminal` it is started as a shell starts a command there: in a
    process group of its own, SIGINT at its default whatever the test process does with it,
    so that `Server.interrupt` is a person's Ctrl+C."""
    # A file, not a pipe: a pipe nobody reads fills up and blocks the server.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by Server.stop
    daphne = subprocess.Popen(
        [sys.executable, "-m", "project.serve", "-b", "127.0.0.1", "-p", str(port or 0),
         *DAPHNE_LIMITS, *args, asgi],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        process_group=0 if terminal else None,
        preexec_fn=_sigint_at_its_default if terminal else None,
    )  # fmt: skip
    deadline = time.monotonic() + seconds
    # Port 0: the kernel's choice, which no other process can take between a pick and the
    # bind. The server's own line names it once it listens.
    while (listening := listening_port(log, args)) is None or not accepting(listening):
        if daphne.poll() is not None or time.monotonic() > deadline:
            daphne.kill()
            daphne.wait()
            problem = os.pread(log.fileno(), 1 << 20, 0).decode(errors="replace")
            raise RuntimeError(f"Daphne did not start: {problem}")
        time.sleep(0.05)
    port = listening
    return Server(f"http://127.0.0.1:{port}", env, daphne, log)


# Daphne's line for each endpoint it listens on, or the supervisor's (`--workers`) once its
# socket does; whole lines only, not one caught half written.
LISTENING = re.compile(
    rb"(?:Listening on TCP address [^\s:]+:|processes on http://[^\s/]+:)(\d+)/?\r?\n"
)


def listening_port(log: IO[bytes], args: tuple[str, ...] = ()) -> int | None:
    """The port a server's log says it listens on, other than those its `args` name (an
    endpoint of a test's own, which Daphne may list first); read without moving the file's
    offset, which the server writes at."""
    named = {int(port) for port in re.findall(r"port=(\d+)", " ".join(args))}
    said = (int(port) for port in LISTENING.findall(os.pread(log.fileno(), 1 << 20, 0)))
    return next((port for port in said if port not in named), None)


def _sigint_at_its_default() -> None:
    # A process that ignores SIGINT (a test runner's worker may) passes that on to its
    # children, and neither Python nor Twisted would then handle it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def login(url: str) -> tuple[str, str]:
    """Logs in as the demo user like a browser; a new conversation and the cookies."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{url}/accounts/login/").read().decode()
    token = csrf_token(page)
    form = urllib.parse.urlencode(
        {"username": "demo", "password": "demo", "csrfmiddlewaretoken": token}
    ).encode()
    opener.open(urllib.request.Request(f"{url}/accounts/login/", data=form,
                                       headers={"Referer": f"{url}/accounts/login/"}))  # fmt: skip
    # Logging in rotates the CSRF token: use the new one from its cookie.
    token = next(c.value for c in jar if c.name == "csrftoken" and c.value is not None)
    # An empty conversation, as a program makes one: the page's stores nothing until asked.
    headers = {"X-CSRFToken": token, "Referer": f"{url}/", "Content-Type": "application/json"}
    new = opener.open(urllib.request.Request(f"{url}/api/conversations/", data=b"{}",
                                             headers=headers))  # fmt: skip
    conversation = json.loads(new.read())["id"]
    cookies = "; ".join(f"{c.name}={c.value}" for c in jar)
    return conversation, cookies


def services() -> tuple[str, str]:
    """PostgreSQL's and Redis's URLs (.ci/run starts them); without them the test is skipped,
    unless REQUIRE_SERVICES=1 makes their absence a failure."""
    database, redis = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if database.startswith("postgres") and redis:
        return database, redis
    if os.environ.get("REQUIRE_SERVICES") == "1":
        pytest.fail("REQUIRE_SERVICES=1 but DATABASE_URL (PostgreSQL) or REDIS_URL is missing")
    pytest.skip("needs PostgreSQL and Redis (DATABASE_URL, REDIS_URL); .ci/run starts them")


@contextlib.contextmanager
def two_servers(work: Path, **settings: str) -> Iterator[tuple[Server, Server]]:
    """Two Daphne processes sharing a fresh PostgreSQL database and Redis."""
    import psycopg

    database, redis = services()
    name = f"glassbox_test_{uuid.uuid4().hex[:8]}"
    admin = database.rsplit("/", 1)[0] + "/postgres"
    # A copy of the run's migrated and seeded database, when there is one.
    from tests.support.template_database import seeded_template

    template = seeded_template(database)
    with psycopg.connect(admin, autocommit=True) as connection:
        copy = f' TEMPLATE "{template}"' if template else ""
        connection.execute(f'CREATE DATABASE "{name}"{copy}')
    shared = {"DATABASE_URL": database.rsplit("/", 1)[0] + "/" + name, "REDIS_URL": redis}
    try:
        seeded = template is not None
        # Every option named, so that the settings can only be settings.
        with serve(
            work, (), None, mcp_opened=True, seeded=seeded, terminal=False, **shared, **settings
        ) as first:
            second = start_daphne(first.env)
            try:
                yield first, second
            except Exception:
                print(f"== What the server at {second.url} wrote:\n{second.said()[-20_000:]}")
                raise
            finally:
                second.stop()
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def api(server: Server, token: str, path: str, body=None, accept="application/json"):
    """One call to a live server's API with a token; a body makes it a POST."""
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode() if body is not None else None,
        method="POST" if body is not None else "GET",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json",
                 "Accept": accept},
    )  # fmt: skip
    return urllib.request.urlopen(request, timeout=60)
