from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
import pytest_asyncio
from django.contrib.auth import get_user_model
from django.utils import translation

from chat.knowledge import search
from chat.knowledge.documents import DOCUMENTS
from chat.models import Conversation, Document
from tests.support.servers import RUN_FOLDER, run_folder
from tests.support.template_database import drop_templates, migrated_template, on_postgres


def pytest_configure(config):
    """pytest's first process makes a folder for the whole run, which pytest-xdist's workers
    inherit: what the first process to need it builds there, the others use (the migrated
    site servers start from: tests.support.servers.once_per_run)."""
    if hasattr(config, "workerinput"):
        return
    folder = tempfile.mkdtemp(prefix="glassbox-run-")
    os.environ[RUN_FOLDER] = folder

    def clean_up() -> None:
        drop_templates(Path(folder))
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(clean_up)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """On PostgreSQL, this process's test database is a copy of the run's migrated template
    (tests.support.template_database) rather than migrated again beside the others."""
    from django.db import connections

    url, folder = on_postgres(), run_folder()
    if url and folder:
        test_settings = connections["default"].settings_dict.setdefault("TEST", {})
        test_settings["TEMPLATE"] = migrated_template(url, folder)


@pytest.fixture(autouse=True, scope="session")
def own_channel_prefix():
    """Test processes running side by side share the Redis, and their databases hold users
    and sessions of the same ids: each speaks under a prefix of its own."""
    from channels.layers import channel_layers
    from django.conf import settings

    config = settings.CHANNEL_LAYERS["default"].get("CONFIG", {})
    if "prefix" in config:
        config["prefix"] = f"test-{uuid.uuid4().hex[:8]}"
        channel_layers.backends.clear()


@pytest.fixture(scope="session", autouse=True)
def api_schema_limits():
    """The API's serializers are loaded before any test changes a setting: their schema
    states the limits read when the module loads (a question's length)."""
    import chat.api.serializers  # noqa: F401


@pytest.fixture(autouse=True)
def fast_agent(settings):
    """The demo model without its human-watchable pace, and a tiny text-frame window."""
    settings.GLASSBOX_DEMO_DELAY = 0
    settings.GLASSBOX_TEXT_FRAME_SECONDS = 0.005
    settings.OPENAI_API_KEY = ""
    settings.GLASSBOX_MODEL = "glassbox-demo"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The revocation relay is for processes the layer does not reach; in a test process it
    # would read the shared in-memory SQLite database from a thread of its own, and lock its
    # table against the test (tests/test_revocation_in_memory.py runs it in a real server).
    settings.GLASSBOX_REVOCATION_POLL_SECONDS = 0


@pytest.fixture(autouse=True)
def database_never_away(monkeypatch):
    """An outage another test met in this process would give its silent turns another grace
    (project.outages.seen_down)."""
    from project import outages

    monkeypatch.setattr(outages, "_seen_down", None)


@pytest.fixture(autouse=True)
def fresh_search_index():
    """The search index is checked against the database at most once a second; a test's rows
    are rolled back without the signals that tell it."""
    search.forget()
    yield
    search.forget()


@pytest.fixture(autouse=True)
def fresh_server_list():
    """The MCP servers admins declared are read at most every few seconds; a test's rows are
    flushed or rolled back without the signals that tell it."""
    from chat.servers import configured

    configured.forget()
    yield
    configured.forget()


@pytest.fixture(autouse=True)
def english_unless_asked():
    """Django keeps the language a request activated in its thread: a page one test asked for
    in Chinese must not make the next test's turn Chinese."""
    translation.activate("en")
    yield
    translation.deactivate()


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="alice-password")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="bob-password")


@pytest.fixture
def knowledge_base(db):
    return Document.objects.bulk_create(
        Document(title=title, language=language, body=body) for title, language, body in DOCUMENTS
    )


@pytest.fixture
def alice_conversation(alice):
    return Conversation.objects.create(owner=alice)


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Browser tests run last, after the random shuffle, so that the browser and the servers
    it drives start in as few test processes as pytest-xdist's stealing allows."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Once a browser test ran in a process, Playwright's sync API leaves its event loop marked
    as running in the main thread between its calls, for the rest of the session. Under that
    mark Django refuses the ORM and asyncio refuses to start a loop, so every other test runs
    without it; a process that stole browser tests from another's queue goes on to the rest.
    The browser fixture marks its loop again before it closes the browser."""
    browsers = asyncio._get_running_loop()
    if browsers is None or item.get_closest_marker("e2e") is not None:
        return (yield)
    asyncio._set_running_loop(None)
    try:
        return (yield)
    finally:
        if asyncio._get_running_loop() is None and browsers.is_running():
            asyncio._set_running_loop(browsers)


@pytest.fixture
def gate():
    """Pauses the demo model mid-stream: `gate(after=chunks, request=n)` holds the n-th model
    response of the test after that many chunks until `.open()`; `await g.reached.wait()`
    returns once the turn is held there."""
    from chat.agent.demo_wire import Gate, install_gate

    made: list[Gate] = []

    def install(after: int, request: int = 1) -> Gate:
        made.append(Gate(after, request))
        install_gate(made[-1])
        return made[-1]

    yield install
    for held in made:
        held.open()
    install_gate(None)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's, and one more thing before the test database is dropped: async tests
    reach the database from asgiref's one thread for sync code, and requests served here
    from the request threads the handler keeps (project.request_threads), whose connections
    outlive them and are closed here, or PostgreSQL refuses to drop a database still in use."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    # Straight to that thread: the browser tests leave an event loop running here.
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=10)
    served = sys.modules.get("project.asgi")
    if served is not None:
        served.request_threads.close()


@pytest.fixture(autouse=True)
def turns_end_with_their_test(request):
    """Every async test's turns end in its own event loop (tests.support.sockets.
    stop_turns_left_running), also when it fails mid-turn."""
    if request.node.get_closest_marker("asyncio") is not None:
        request.getfixturevalue("_turns_stopped_at_the_end")


@pytest_asyncio.fixture
async def _turns_stopped_at_the_end():
    from chat.agent.client import close_clients
    from chat.turns.recovery import stop_settling
    from tests.support.sockets import stop_turns_left_running

    yield
    await stop_turns_left_running()
    await stop_settling()
    await close_clients()


@pytest.fixture
def dependencies():
    """Hands the turns this test starts, however they start (a socket, the API, a decision),
    what they run with: `dependencies(Dependencies(...))` (chat.turns.deps); the configured
    ones again at its end."""
    from chat.turns import deps

    with contextlib.ExitStack() as stack:
        yield lambda replacement: stack.enter_context(deps.using(replacement))
