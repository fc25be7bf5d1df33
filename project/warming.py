"""What a server's first turn would otherwise build on its event loop, built on a thread of its
own as the server starts: the first question held the loop 150 to 300 ms compiling the
templates a turn draws, reading the translation catalogues and loading the language
identifier, in every process, so its first asker (and every socket beside it) waited."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from django.conf import settings
from django.template.loader import get_template
from django.utils import translation

from project.languages import written_language

logger = logging.getLogger("glassbox")


def warm_aside(templates: Iterable[str]) -> threading.Thread:
    """Starts warming on a daemon thread; the thread, for a caller that waits on it."""
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
