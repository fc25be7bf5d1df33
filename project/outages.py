"""While the database does not answer, a request gets a 503 with Retry-After instead of
Django's HTML 500: JSON on /api/ (as the API's schema says of every error), a plain page
elsewhere. The page is rendered from nothing the database holds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.deprecation import MiddlewareMixin
from django.utils.translation import gettext as _

logger = logging.getLogger("glassbox.outages")

DATABASE_DOWN = (OperationalError, InterfaceError)
# Seconds a client should wait: a restarting database is usually back within them.
RETRY_AFTER = 5

# When this process last found the database unreachable, by its own clock: a turn's runner
# could not beat then either (chat.turns.recovery counts a turn's silence from it at the
# latest), whatever cut the way (a restart, a failover, the network).
_seen_down: datetime | None = None


def seen_down() -> datetime | None:
    return _seen_down


def _note(problem: BaseException) -> None:
    global _seen_down
    if unreachable(problem):
        _seen_down = timezone.now()


_NOT_POSTGRESQL = object()


def unreachable(problem: BaseException) -> bool:
    """Whether a database error says the database could not be reached (a restart, a
    failover, a cut connection), not that it refused a statement (a deadlock, a timeout, a
    lock): PostgreSQL's errors of a connection carry no SQLSTATE, or one of class 08 or 57P."""
    if isinstance(problem, InterfaceError):
        return True
    state = getattr(problem.__cause__, "sqlstate", _NOT_POSTGRESQL)
    return state is None or (isinstance(state, str) and state.startswith(("08", "57P")))


async def while_down[T](
    attempt: Callable[[], Awaitable[T]],
    *,
    first: float,
    most: float,
    for_seconds: float,
    failed: Callable[[float, bool], None],
) -> T:
    """`attempt()`, tried again while the database is unreachable (a restart, a failover):
    `first` seconds between the first tries, doubling up to `most`; the last failure is
    raised once the next try would start more than `for_seconds` after the first.
    `failed(wait, first_time)` hears of each failure that is tried again."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + for_seconds
    wait = first
    while True:
        try:
            return await attempt()
        except DATABASE_DOWN as problem:
            _note(problem)
            if loop.time() + wait > give_up:
                raise
            failed(wait, wait == first)
        await asyncio.sleep(wait)
        wait = min(wait * 2, most)


def unavailable(request: HttpRequest) -> HttpResponse:
    response: HttpResponse
    if request.path_info.startswith("/api/"):
        detail = _("The database does not answer right now; try again in a moment.")
        response = JsonResponse({"detail": detail}, status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER)
    return response


class DatabaseOutageMiddleware(MiddlewareMixin):
    """After AuthenticationMiddleware: the user is read here, so a database that fails on
    the session or the user is answered here, before any later middleware would turn the
    failure into a 500; what fails later, in a view (DRF's too, whose own handler passes
    database errors on) or its template, comes to `process_exception`."""

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        try:
            request.user.is_authenticated  # noqa: B018 (read now, where a failure is caught)
        except DATABASE_DOWN as problem:
            return self._down(request, problem)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DATABASE_DOWN):
            return self._down(request, exception)
        return None

    def _down(self, request: HttpRequest, problem: Exception) -> HttpResponse:
        _note(problem)
        logger.warning("database unavailable for %s: %s", request.path, problem)
        return unavailable(request)
