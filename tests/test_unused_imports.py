"""A server leaves out what its configuration never uses (project.unused): psycopg on SQLite,
the TLS stack when it serves plain TCP, DRF's optional requests and Pygments, the click that
Autobahn would colour every frame's debug line with, and cryptography (Autobahn's WAMP
authenticators and the secrets' key each load it on first use); the model's SDK (with
aiohttp) waits for a socket or a turn, and loads without its types of every API;
jsonschema and RE2 wait for the first schema checked; the API's schema generator (with
Django's test client) waits for the schema's page;
Redis's client only comes with its channel layer. TLS still works when an endpoint asks for
it, the trace exporter still finds requests, and the server runs on asyncio's own loop when
uvloop is turned off."""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import urllib.request

import pytest

from tests.support.certificates import self_signed
from tests.support.fakes import text_response
from tests.support.live_questions import live_socket
from tests.support.ports import free_port
from tests.support.provider_server import scripted_provider
from tests.support.servers import ROOT, login, serve

pytestmark = [pytest.mark.server, pytest.mark.own_site]

# Imported by the code that uses them, not as a server starts: the model's SDK (a socket or a
# turn), the schema checks (an MCP server, a question, an approval's edits), the API's views
# with DRF's schema decorators and django.test (a request to the API).
WAITING_FOR_USE = (
    "openai",
    "aiohttp",
    "jsonschema",
    "re2",
    "activity.api.views",
    "drf_spectacular.utils",
    "django.test",
)


def imported(log: str) -> set[str]:
    """The modules named by a server's `-X importtime` lines."""
    return set(re.findall(r"\|\s+([\w.]+)$", log, re.MULTILINE))


def imported_by_a_visit(work, **settings: str) -> set[str]:
    """The modules a server imported while it served a visit (a page, a login and the chat
    page), from its `-X importtime` lines. A module left out shows up too, as a failed
    attempt with no submodules."""
    # Every option named, so that the settings can only be settings.
    with serve(
        work,
        (),
        None,
        mcp_opened=True,
        seeded=False,
        terminal=False,
        PYTHONPROFILEIMPORTTIME="1",
        **settings,
    ) as server:
        login(server.url)
        log = server.said()
    return imported(log)


def test_a_plain_server_on_sqlite_loads_neither_psycopg_nor_the_tls_stack(tmp_path):
    packages = imported_by_a_visit(tmp_path)
    assert {"daphne.server", "chat.turns.shutdown", "twisted.internet.tcp"} <= packages
    assert "psycopg.pq" not in packages
    assert "OpenSSL.crypto" not in packages
    assert "requests.sessions" not in packages and "pygments.lexers" not in packages
    assert "mcp.client.session" not in packages  # the MCP SDK waits for a server to be used
    assert "ag_ui.core" not in packages  # its models wait for an AG-UI stream
    assert "openai" not in packages and "aiohttp" not in packages  # for a socket or a turn
    assert "jsonschema" not in packages and "re2" not in packages  # for a schema to check
    # The login made a conversation through the API: its views' schema annotations, and the
    # generator with Django's test client, wait for the API's schema to be asked for.
    assert "chat.api.views" in packages
    assert "drf_spectacular.openapi" not in packages and "django.test" not in packages
    assert "autobahn.util" in packages and "click.termui" not in packages
    # Autobahn's WAMP authenticators wait for a WAMP session, and the secrets' key for a
    # secret: nothing loads cryptography.
    assert "autobahn.twisted.wamp" in packages and "cryptography" not in packages


async def turn_over(server, conversation: str, cookies: str, question: str) -> list[dict]:
    """A question asked over a live server's JSON socket; its turn's events, to `done`."""
    async with live_socket(server, conversation, cookies) as socket:
        await socket.send(json.dumps({"message": question}))
        async with asyncio.timeout(60):
            events = [json.loads(await socket.recv())]
            while events[-1]["type"] != "done":
                events.append(json.loads(await socket.recv()))
    return events


async def answer_over(server, conversation: str, cookies: str, question: str) -> str:
    """The text of the answer to a question asked as `turn_over` asks it."""
    events = await turn_over(server, conversation, cookies, question)
    return "".join(event["content"] for event in events if event["type"] == "text")


def test_a_served_turn_loads_the_models_sdk_without_its_types_of_every_api(tmp_path):
    with serve(tmp_path, PYTHONPROFILEIMPORTTIME="1") as server:
        conversation, cookies = login(server.url)
        answer = asyncio.run(answer_over(server, conversation, cookies, "What is the salary?"))
        log = server.said()
    modules = imported(log)
    assert "salary" in answer.lower()  # asked and answered through the SDK's client
    assert {"openai._client", "openai._base_client"} <= modules
    # The types package's and the Responses API's `__init__`s import 470 modules between
    # them, of which the SDK's client needs a few; the package's own `__init__` would import
    # its helpers for every API's tools, and the chat types they are built on.
    assert not {"openai.types.batch", "openai.types.responses.web_search_tool"} & modules
    assert not {"openai.lib._tools", "openai.lib.azure", "openai.types.chat"} & modules
    assert len([module for module in modules if module.startswith("openai.")]) < 100
    # The demo model searched the knowledge base for it, a built-in tool's call, made without
    # OpenTelemetry's API: only an MCP server's requests carry a span (chat.agent.traceparent).
    assert "opentelemetry.trace" not in modules


def test_a_turn_from_a_real_provider_is_read_without_the_sdk_transports_package(tmp_path):
    with (
        scripted_provider([text_response("Negotiate with figures.")]) as provider,
        serve(
            tmp_path,
            PYTHONPROFILEIMPORTTIME="1",
            OPENAI_API_KEY="test",
            OPENAI_BASE_URL=provider.url,
            GLASSBOX_MODEL="test-model",
        ) as server,
    ):
        conversation, cookies = login(server.url)
        answer = asyncio.run(answer_over(server, conversation, cookies, "How?"))
        log = server.said()
    modules = imported(log)
    assert answer == "Negotiate with figures."
    # Sent by the SDK's aiohttp client, with the TLS context its HTTP library would make,
    # made from that library's transport package's TLS module alone: not its pools, HTTP/2,
    # SOCKS or trio support.
    assert {"openai._vendor.httpx_aiohttp.transport", "httpcore2._ssl"} <= modules
    assert not {"httpcore2._api", "h2.connection", "socksio"} & modules


def test_a_provider_that_cannot_be_reached_is_said_so_by_the_sdks_deferred_package(tmp_path):
    # Nothing listens on the port: the SDK raises its own error, a name of its package,
    # whose `__init__` runs then, once.
    unreachable = f"http://127.0.0.1:{free_port()}/v1"
    with serve(
        tmp_path,
        PYTHONPROFILEIMPORTTIME="1",
        OPENAI_API_KEY="test",
        OPENAI_BASE_URL=unreachable,
        GLASSBOX_MODEL="test-model",
        GLASSBOX_PROVIDER_RETRIES="0",
    ) as server:
        conversation, cookies = login(server.url)
        seen = asyncio.run(turn_over(server, conversation, cookies, "How?"))
        modules = imported(server.said())
    assert seen[-1]["state"] == "failed"
    assert "could not reach the model provider" in json.dumps(seen).lower()
    assert "openai.lib._tools" in modules


DEFERRED_SDK_TYPES = """
import sys
from project.unused import SDK_TYPES, defer_init
defer_init(*SDK_TYPES)
import openai
from openai.types.responses import function_tool_param
print("init ran:", "openai.types.batch" in sys.modules)
print("module alone:", "openai.types.responses.web_search_tool" not in sys.modules)
from openai.types import Batch
print("a name of the package:", Batch.__module__)
print("a package on its parent:", openai.types.responses.ResponseStreamEvent is not None)
namespace = {}
exec("from openai.types.responses import *", namespace)
print("star:", "ResponseTextDeltaEvent" in namespace)
"""


def test_a_deferred_package_runs_its_init_for_a_name_only_it_provides():
    said = subprocess.run(
        [sys.executable, "-c", DEFERRED_SDK_TYPES], cwd=ROOT, capture_output=True, text=True
    )
    assert said.stdout.splitlines() == [
        "init ran: False",
        "module alone: True",
        "a name of the package: openai.types.batch",
        "a package on its parent: True",
        "star: True",
    ], said.stderr


SLOW_INIT = """
import deferred_gate
from .sub import VALUE
deferred_gate.started.set()
deferred_gate.proceed.wait(30)
if deferred_gate.fail:
    raise RuntimeError("broken")
NAME = VALUE
"""
GATE = "import threading\nstarted, proceed = threading.Event(), threading.Event()\nfail = False\n"


@pytest.fixture
def deferred_package(tmp_path, monkeypatch):
    """A package whose `__init__` waits at a gate, deferred; the package and the gate."""
    import importlib

    from project.unused import defer_init

    package = tmp_path / "deferred_package"
    package.mkdir()
    (package / "__init__.py").write_text(SLOW_INIT)
    (package / "sub.py").write_text("VALUE = 42\n")
    (tmp_path / "deferred_gate.py").write_text(GATE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for name in ("deferred_package", "deferred_package.sub", "deferred_gate"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    defer_init("deferred_package")
    return importlib.import_module("deferred_package"), importlib.import_module("deferred_gate")


def test_a_thread_asking_while_a_deferred_init_runs_waits_for_it(deferred_package):
    import threading

    package, gate = deferred_package
    assert package.sub.VALUE == 42 and not gate.started.is_set()  # a module: no `__init__`
    got: dict[str, object] = {}

    def ask(who: str) -> None:
        try:
            got[who] = package.NAME
        except Exception as problem:
            got[who] = problem

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    assert gate.started.wait(10)  # the first thread runs the `__init__`
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # waiting, not told there is no such name
    gate.proceed.set()
    first.join(10)
    second.join(10)
    assert got == {"first": 42, "second": 42}


def test_a_deferred_init_that_fails_says_so_each_time_it_is_asked(deferred_package):
    package, gate = deferred_package
    gate.fail = True
    gate.proceed.set()
    for _ in range(2):
        with pytest.raises(ImportError, match="deferred_package failed") as failed:
            package.NAME  # noqa: B018
        assert str(failed.value.__cause__) == "broken"
    gate.fail = False
    assert package.NAME == 42


def test_wamp_authentication_left_for_its_first_use_still_works_when_used():
    program = (
        "import sys; from project.unused import TLS, WAMP_AUTH, leave_out, load_on_use;"
        "leave_out(TLS); load_on_use(WAMP_AUTH); import autobahn.twisted.websocket;"
        "before = 'cryptography' in sys.modules;"
        "from autobahn.wamp import auth; key = auth.derive_key('secret', 'salt');"
        "print(before, 'cryptography' in sys.modules, len(key))"
    )
    said = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True
    )
    assert said.stdout.split() == ["False", "True", "44"], said.stderr


def test_an_application_that_has_started_and_warmed_holds_nothing_that_waits_for_use():
    program = (
        "import sys, threading, project.asgi;"
        "[t.join(30) for t in threading.enumerate() if t.name == 'warming'];"
        "print(' '.join(m for m in WAITING if m in sys.modules) or 'none')"
    ).replace("WAITING", repr(WAITING_FOR_USE))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"}
    said = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert said.stdout.split() == ["none"], said.stderr


def test_a_process_on_the_in_memory_channel_layer_never_imports_redis():
    program = (
        "import sys, project.asgi; from channels.layers import get_channel_layer;"
        "print(type(get_channel_layer()).__name__, 'redis' in sys.modules)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"}
    env.pop("REDIS_URL", None)
    said = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert said.stdout.split() == ["SweptInMemoryChannelLayer", "False"], said.stderr


def test_what_the_application_left_out_imports_again_after_it_for_the_trace_exporter():
    program = (
        "import project.asgi, rest_framework.compat as drf;"
        "from activity.telemetry import export;"
        "print(drf.requests is None, type(export.exporter()).__module__)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"}
    said = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert said.stdout.split() == ["True", "opentelemetry.exporter.otlp.proto.http.trace_exporter"]


def test_with_uvloop_turned_off_the_server_runs_on_asyncios_own_loop(tmp_path):
    packages = imported_by_a_visit(tmp_path, GLASSBOX_UVLOOP="0")
    assert "daphne.server" in packages
    assert "uvloop" not in packages


def test_a_server_asked_for_a_tls_endpoint_serves_https(tmp_path):
    key, certificate = self_signed(tmp_path)
    port = free_port()
    endpoint = f"ssl:{port}:interface=127.0.0.1:privateKey={key}:certKey={certificate}"
    with serve(tmp_path, daphne_args=("-e", endpoint)):
        context = ssl.create_default_context(cafile=certificate)
        context.check_hostname = False
        page = urllib.request.urlopen(
            f"https://127.0.0.1:{port}/accounts/login/", context=context, timeout=10
        )
        assert page.status == 200
        assert b"csrfmiddlewaretoken" in page.read()
