"""A server builds what its first turn draws before anyone asks (project.warming): the turn's
templates compiled into the cached loader, the catalogues read; a name that cannot be built
is logged and leaves the server as it was. What only a turn needs is imported on a thread
once a question is likely, once a process; a socket that opens asks for the model's SDK."""

from __future__ import annotations

import asyncio
import builtins
import logging
import sys
import threading

import pytest
from django.template import engines
from django.template.loaders.cached import Loader

from chat.agent.client import SDK
from chat.turns.deps import sdk_imported
from project.warming import import_aside, warm_aside
from tests.support.sockets import open_socket


def cached_names() -> set[str]:
    loader = engines["django"].engine.template_loaders[0]  # type: ignore[attr-defined]
    assert isinstance(loader, Loader), "templates are not cached: warming would be lost"
    return {key.split("-")[0] for key in loader.get_template_cache}


@pytest.fixture
def cold():
    loader = engines["django"].engine.template_loaders[0]  # type: ignore[attr-defined]
    loader.reset()
    yield
    loader.reset()


def test_the_turns_templates_are_compiled_before_the_first_turn(cold):
    assert "chat/_assistant_message.html" not in cached_names()

    warm_aside(["chat/_assistant_message.html", "chat/_question.html"]).join(30)

    assert {"chat/_assistant_message.html", "chat/_question.html"} <= cached_names()


def test_a_template_that_cannot_be_built_is_logged_and_changes_nothing(cold, caplog):
    with caplog.at_level(logging.ERROR, logger="glassbox"):
        thread = warm_aside(["chat/no_such_template.html"])
        thread.join(30)

    assert not thread.is_alive()
    assert "warming up failed" in caplog.text and "no_such_template" in caplog.text


@pytest.fixture
def a_module(tmp_path, monkeypatch):
    (tmp_path / "glassbox_imported_aside.py").write_text(
        "import threading\nLOADED = True\nBY = threading.get_ident()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "glassbox_imported_aside"
    sys.modules.pop("glassbox_imported_aside", None)


def test_a_module_is_imported_aside_once_a_process(a_module):
    thread = import_aside(a_module)
    assert thread is not None and thread.name == "importing"
    thread.join(30)

    assert sys.modules[a_module].LOADED
    assert import_aside(a_module) is None


def test_a_module_that_cannot_be_imported_aside_is_logged(caplog):
    with caplog.at_level(logging.ERROR, logger="glassbox"):
        thread = import_aside("glassbox_no_such_module")
        assert thread is not None
        thread.join(30)

    assert "importing glassbox_no_such_module ahead failed" in caplog.text


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_socket_that_opens_has_the_models_sdk_imported_ahead(
    alice, alice_conversation, monkeypatch
):
    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr("chat.turns.deps.import_aside", lambda *names: asked.append(names))

    socket = await open_socket(alice_conversation, alice)
    await socket.disconnect()

    assert asked == [(SDK,)]


@pytest.mark.asyncio
async def test_a_turn_imports_the_models_sdk_off_the_event_loop(a_module, monkeypatch):
    """Imported on the loop, it stopped every socket and heartbeat of the process: long
    enough, on a loaded machine, for another process to take a turn for dead."""
    monkeypatch.setattr("chat.turns.deps.SDK", a_module)

    await sdk_imported()

    assert sys.modules[a_module].LOADED
    assert threading.get_ident() != sys.modules[a_module].BY


@pytest.mark.asyncio
async def test_a_turn_waits_off_the_event_loop_for_an_import_another_thread_began(
    tmp_path, monkeypatch
):
    """A question asked as its socket opens finds the SDK in sys.modules, half imported by
    the socket's thread: its lock, waited for on the loop, held every socket half a second."""
    began, gate = threading.Event(), threading.Event()
    monkeypatch.setattr(builtins, "glassbox_import_began", began, raising=False)
    monkeypatch.setattr(builtins, "glassbox_import_gate", gate, raising=False)
    (tmp_path / "glassbox_slow_import.py").write_text(
        "import builtins\n"
        "builtins.glassbox_import_began.set()\n"
        "builtins.glassbox_import_gate.wait(10)\n"
        "LOADED = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("chat.turns.deps.SDK", "glassbox_slow_import")
    try:
        aside = import_aside("glassbox_slow_import")
        assert aside is not None
        assert await asyncio.to_thread(began.wait, 10)

        waiting = asyncio.create_task(sdk_imported())
        for _ in range(5):
            await asyncio.sleep(0.01)  # the loop runs on meanwhile
        assert not waiting.done()

        gate.set()
        await asyncio.wait_for(waiting, 10)
        assert sys.modules["glassbox_slow_import"].LOADED
    finally:
        gate.set()
        sys.modules.pop("glassbox_slow_import", None)
