"""What a server's first turn would otherwise build on its event loop, built on a thread of its
own as the server starts: the first question held the loop 150 to 300 ms compiling the
templates a turn draws, reading the translation catalogues and loading the language
identifier, in every process, so its first asker (and every socket beside it) waited.

What only a turn needs and is large (the provider's SDK, about 16 MiB) is not built as the
server starts, so that a process nobody asks anything holds none of it: it is imported on a
thread of its own once a question is likely (`import_aside`, when a socket opens)."""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Iterable

from django.conf import settings
from django.template import engines
from django.template.loader import get_template
from django.utils import translation

from project import heap
from project.languages import written_language

logger = logging.getLogger("glassbox")

_asked: set[str] = set()
_asking = threading.Lock()


def warm_aside(templates: Iterable[str]) -> threading.Thread:
    """Starts warming on a daemon thread; the thread, for a caller that waits on it. The
    template engines are made first, on the calling thread: making one imports every app's
    tag libraries (DRF's brings its renderers and serializers), and what a second thread
    allocates lands in a malloc arena of its own, about 6 MiB more of the idle process's
    RSS for the same imports (bench/idle_memory.py)."""
    engines.all()
    names = tuple(templates)
    thread = threading.Thread(target=_warm, args=(names,), name="warming", daemon=True)
    thread.start()
    return thread


def _warm(templates: tuple[str, ...]) -> None:
    try:
        written_language("How do I negotiate my salary?")
        for code, _name in settings.LANGUAGES:
            with translation.override(code):
                translation.gettext("Done")
        for name in templates:
            get_template(name)
    except Exception:  # a failure here is the first turn's to report, as before
        logger.exception("warming up failed; the first turn builds what it needs itself")


def import_aside(*modules: str) -> threading.Thread | None:
    """Imports the `modules` not imported yet on a daemon thread, each once a process; the
    thread, if one was started (a caller may wait on it). An import that fails is logged:
    the code that needs the module imports it again, and reports the failure itself."""
    with _asking:
        names = tuple(name for name in modules if name not in _asked and name not in sys.modules)
        _asked.update(names)
    if not names:
        return None
    thread = threading.Thread(target=_import, args=(names,), name="importing", daemon=True)
    thread.start()
    return thread


def _import(modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            logger.exception("importing %s ahead failed; its first use imports it itself", name)
    heap.adopt()
