"""Scores as Phoenix annotations (issue 54): where GLASSBOX_PHOENIX_URL is set and traces
are on, each rating or label is posted to Phoenix's span annotation API on the span it
judges (the turn's for the answer, the call's for a tool call). One annotation per person,
name and span (its `identifier`): a later score replaces it in Phoenix, as the latest counts
here; the feed keeps every one. Plain HTTP, no Phoenix client: one small JSON request."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

from django.conf import settings

from activity import telemetry
from activity.models import ActivityEvent, ActivityFeed
from activity.recording.events import Score
from activity.telemetry.ids import span_id, tool_span_id, trace_id

logger = logging.getLogger(__name__)
TIMEOUT_SECONDS = 5
MISSING_SPAN_SECONDS = 30
# The annotations' names in Phoenix.
RATING = "user rating"
LABEL = "auditor label"


def enabled() -> bool:
    return bool(settings.GLASSBOX_PHOENIX_URL) and telemetry.enabled()


def annotations_of(feed_id: int, started_at: Any, scores: Iterable[Score]) -> list[dict]:
    """The annotations these scores make, in their order (a later one of the same person,
    name and span replaces an earlier in Phoenix). Who scored is sent as an id, never a
    name; the note only with content capture, as in the spans."""
    trace = trace_id(feed_id, started_at)
    made = []
    for score in scores:
        span = tool_span_id(trace, score.call_id) if score.call_id else span_id(trace, "turn")
        person = f"glassbox-user-{score.by_id}" if score.by_id is not None else "glassbox-erased"
        note = score.note if settings.OTEL_CAPTURE_MESSAGE_CONTENT and score.note else None
        base = {"span_id": f"{span:016x}", "annotator_kind": "HUMAN", "identifier": person}
        if score.value:
            rated: dict[str, Any] = {"label": score.value, "score": int(score.value == "up")}
            made.append(base | {"name": RATING, "result": rated | {"explanation": note}})
        if score.label:
            labelled: dict[str, Any] = {"label": score.label, "explanation": note}
            made.append(base | {"name": LABEL, "result": labelled})
    return made


def post(annotations: list[dict]) -> None:
    """Sends annotations to Phoenix, now; a failure is logged, never raised: the record has
    the score whatever the trace backend does. Phoenix stores received spans in the
    background and refuses to annotate a span it has not stored yet (404): asked again for
    up to MISSING_SPAN_SECONDS (the turn's spans may still be in the exporter's batch)."""
    if not annotations:
        return
    deadline = time.monotonic() + MISSING_SPAN_SECONDS
    wait = 0.1
    while True:
        try:
            _post(annotations)
            return
        except urllib.error.HTTPError as failed:
            if failed.code != 404 or time.monotonic() + wait > deadline:
                logger.warning(
                    "Phoenix did not take %d annotation(s): %s", len(annotations), failed
                )
                return
        except (urllib.error.URLError, OSError) as failed:
            logger.warning("Phoenix did not take %d annotation(s): %s", len(annotations), failed)
            return
        time.sleep(wait)
        wait = min(wait * 2, 2.0)


def _post(annotations: list[dict]) -> None:
    body = json.dumps({"data": annotations}).encode()
    request = urllib.request.Request(
        f"{settings.GLASSBOX_PHOENIX_URL.rstrip('/')}/v1/span_annotations?sync=true",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
        response.read()


# One sender, in order: a changed rating must reach Phoenix after the one it replaces.
_queue: queue.Queue[list[dict]] = queue.Queue()
_sender_lock = threading.Lock()
_sender: threading.Thread | None = None


def _send_queued() -> None:
    while True:
        made = _queue.get()
        try:
            post(made)
        finally:
            _queue.task_done()


def score_given(feed_id: int, score: Score) -> None:
    """A score was recorded: its annotation goes to Phoenix from this process's sender
    thread (the person who rated never waits on the trace backend)."""
    global _sender
    if not enabled():
        return
    started_at = ActivityFeed.objects.values_list("started_at", flat=True).get(pk=feed_id)
    _queue.put(annotations_of(feed_id, started_at, [score]))
    with _sender_lock:
        if _sender is None:
            _sender = threading.Thread(
                target=_send_queued, name="phoenix-annotations", daemon=True
            )
            _sender.start()


def flush() -> None:
    """Waits until every annotation given so far was sent (or failed)."""
    _queue.join()


def period_annotations(feeds: Iterable[ActivityFeed]) -> int:
    """Every score of these feeds, in order, to Phoenix (`manage.py export_otel`, after
    their spans); returns how many annotations were sent."""
    sent = 0
    for feed in feeds:
        rows = feed.events.filter(kind=ActivityEvent.Kind.SCORE).order_by("seq")
        scores = [event for row in rows if isinstance(event := row.to_event(), Score)]
        made = annotations_of(feed.pk, feed.started_at, scores)
        post(made)
        sent += len(made)
    return sent
