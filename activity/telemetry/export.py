"""The planned spans (spans.py) sent through the OpenTelemetry SDK: each becomes the SDK's
own finished span, with its recorded times and derived ids, and goes to the SDK's OTLP
exporter through a batch processor (its own thread: a turn never waits on the network).

The exporter is the SDK's own for the protocol chosen (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf`, or `grpc`); its constructor reads the rest of
the standard variables itself (headers, timeout, compression, certificates). Only the
endpoint is handed in, resolved as the specification says (settings.traces_endpoint), since
tests and the settings' checks read it too. Imported only when traces are on."""

from __future__ import annotations

import atexit
import functools
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from activity.models import ActivityEvent, ActivityFeed, ModelCall
from activity.telemetry.spans import Options, SpanPlan, TracePlan, trace_plan
from project.otel import traces_endpoint

SCOPE = InstrumentationScope("glassbox.activity.telemetry")
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
_lock = threading.Lock()
_processors: dict[str, BatchSpanProcessor] = {}


def processor_endpoint() -> str:
    """Where traces go, as the exporter is given it."""
    return traces_endpoint(
        traces=settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
        base=settings.OTEL_EXPORTER_OTLP_ENDPOINT,
        protocol=settings.OTEL_TRACES_PROTOCOL,
    )


def exporter() -> SpanExporter:
    """The SDK's exporter for the configured protocol, reading its other settings itself."""
    endpoint = processor_endpoint()
    if settings.OTEL_TRACES_PROTOCOL == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=endpoint)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HTTPSpanExporter,
    )

    return HTTPSpanExporter(endpoint=endpoint)


def processor() -> BatchSpanProcessor:
    """This process's batch processor for the configured protocol and endpoint."""
    key = f"{settings.OTEL_TRACES_PROTOCOL} {processor_endpoint()}"
    with _lock:
        if key not in _processors:
            _processors[key] = BatchSpanProcessor(exporter())
            atexit.register(_processors[key].shutdown)
        return _processors[key]


def options() -> Options:
    return Options(content=settings.OTEL_CAPTURE_MESSAGE_CONTENT)


@functools.cache
def resource() -> Resource:
    """This process as the traces name it. Once: Resource.create runs the SDK's detectors
    (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read there)."""
    return Resource.create({"service.name": "glassbox"})


# The columns a span reads; what was said only when content is captured (`arguments` is
# read always: a result keeps its MCP session id there).
EVENT_COLUMNS = (
    "feed_id", "seq", "kind", "icon", "message", "state", "tool", "call_id", "ok",
    "result_summary", "duration_ms", "server", "progress", "progress_total", "progress_message",
    "progress_count", "created_at", "arguments",
)  # fmt: skip
CONTENT_COLUMNS = ("result_content",)


def finished_feeds(feeds: QuerySet[ActivityFeed], chosen: Options) -> Iterator[ActivityFeed]:
    """Feeds whose turn is over, with their model calls and events, a hundred at a time."""
    columns = EVENT_COLUMNS + (CONTENT_COLUMNS if chosen.content else ())
    events = Prefetch("events", ActivityEvent.objects.order_by().only(*columns))
    finished = feeds.filter(finished_at__isnull=False).order_by("started_at", "pk")
    return finished.prefetch_related("model_calls", events).iterator(chunk_size=100)


def plans(feeds: QuerySet[ActivityFeed]) -> Iterator[TracePlan]:
    chosen = options()
    for feed in finished_feeds(feeds, chosen):
        yield trace_plan(feed, feed.model_calls.all(), feed.events.all(), chosen)


def feed_plan(feed_id: int) -> TracePlan | None:
    """One finished turn's trace, read in three plain queries (a turn's end pays them)."""
    feed = ActivityFeed.objects.filter(pk=feed_id, finished_at__isnull=False).first()
    if feed is None:
        return None
    chosen = options()
    columns = EVENT_COLUMNS + (CONTENT_COLUMNS if chosen.content else ())
    calls = ModelCall.objects.filter(feed_id=feed_id).order_by()
    events = ActivityEvent.objects.filter(feed_id=feed_id).order_by().only(*columns)
    return trace_plan(feed, calls, events, chosen)


def sdk_spans(plan: TracePlan, on: Resource) -> list[ReadableSpan]:
    contexts = {span.span_id: _context(plan.trace_id, span.span_id) for span in plan.spans}
    return [_sdk_span(span, contexts, on) for span in plan.spans]


def _context(trace: int, span: int) -> SpanContext:
    return SpanContext(trace, span, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _sdk_span(span: SpanPlan, contexts: dict[int, SpanContext], on: Resource) -> ReadableSpan:
    failure = span.error
    status = (
        Status(StatusCode.ERROR, failure.description or None)
        if failure is not None
        else Status(StatusCode.OK)
    )
    return ReadableSpan(
        name=span.name,
        context=contexts[span.span_id],
        parent=contexts[span.parent_id] if span.parent_id is not None else None,
        resource=on,
        attributes=span.attributes,
        events=[Event(e.name, e.attributes, timestamp=e.at_ns) for e in span.events],
        kind=_KINDS[span.kind],
        status=status,
        start_time=span.start_ns,
        end_time=span.end_ns,
        instrumentation_scope=SCOPE,
    )


def send(traces: Iterable[TracePlan]) -> int:
    """Hands the traces' spans to the batch processor; how many traces."""
    sending, on, count = processor(), resource(), 0
    for plan in traces:
        for span in sdk_spans(plan, on):
            sending.on_end(span)
        count += 1
    return count


def turn_export(feed_id: int) -> None:
    """A turn that just ended: its spans to the batch processor."""
    if (plan := feed_plan(feed_id)) is not None:
        send([plan])


def period_export(since: datetime, until: datetime, batch: int = 512) -> int:
    """Every finished turn that began in [since, until), sent in batches of about `batch`
    spans, each waited for: a backend that does not take one is an error that names it.
    Returns how many turns were sent."""
    feeds = ActivityFeed.objects.filter(started_at__gte=since, started_at__lt=until)
    sending, on = exporter(), resource()
    pending: list[ReadableSpan] = []
    count = 0
    try:
        for plan in plans(feeds):
            pending += sdk_spans(plan, on)
            count += 1
            if len(pending) >= batch:
                _sent(sending, pending)
                pending = []
        if pending:
            _sent(sending, pending)
    finally:
        sending.shutdown()
    return count


def _sent(sending: SpanExporter, spans: list[ReadableSpan]) -> None:
    if sending.export(spans) is not SpanExportResult.SUCCESS:
        raise ExportFailed(f"{processor_endpoint()} did not take the traces.")


class ExportFailed(Exception):
    pass


def flush(timeout_ms: int = 30_000) -> bool:
    return processor().force_flush(timeout_ms)
