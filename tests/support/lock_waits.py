"""Two writers at once on PostgreSQL, the second made to meet the first's lock: the proof
that a write waits for another rather than racing it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection, transaction


def second_waits_for_first(first: Callable[[], object], second: Callable[[], object]) -> None:
    """Runs `first` in a transaction held open until `second` (in its own transaction,
    started once the first has written) is seen waiting on a lock, then lets both finish.
    Fails if the second never waited: the two did not meet."""
    first_in, release = threading.Event(), threading.Event()
    second_backend: list[int] = []

    def run_first() -> None:
        try:
            with transaction.atomic():
                first()
                first_in.set()
                release.wait(10)
        finally:
            connection.close()

    def run_second() -> None:
        try:
            first_in.wait(10)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                second_backend.append(cursor.fetchone()[0])
            with transaction.atomic():
                second()
        finally:
            connection.close()

    threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
    for thread in threads:
        thread.start()
    try:
        _until_waiting(second_backend)
    finally:
        release.set()
        for thread in threads:
            thread.join(10)


def _until_waiting(backend: list[int], limit: float = 10) -> None:
    """Until the second writer's own connection waits for a lock (other databases' waits on
    the shared server do not count)."""
    deadline = time.monotonic() + limit
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            if backend:
                cursor.execute("SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", backend)
                if cursor.fetchone():
                    return
            time.sleep(0.01)
    pytest.fail("the second write never waited for the first")
