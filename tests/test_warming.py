"""A server builds what its first turn draws before anyone asks (project.warming): the turn's
templates compiled into the cached loader, the catalogues read; a name that cannot be built
is logged and leaves the server as it was."""

from __future__ import annotations

import logging

import pytest
from django.template import engines
from django.template.loaders.cached import Loader

from project.warming import warm_aside


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
