"""Trace backends in the test's process: an OTLP/HTTP receiver on a loopback port and an
OTLP/gRPC one (grpcio's server with the trace service's generated stub), each decoding what
the OpenTelemetry SDK's exporter sends (protobuf, as it goes to any backend) and keeping each
span as a dict (name, ids, parent, kind, attributes, events, status, service) with the
headers its request came with. The exporter waits for its answer, so once a flush or an
export returns, what it sent is here; what another process sends is waited for
(`Received.wait_for`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.support.loopback_http import QuietHandler, serving

SpanDict = dict[str, Any]


@dataclass
class Received:
    url: str = ""
    spans: list[SpanDict] = field(default_factory=list)
    # Each request's headers (lower-cased names; gRPC's metadata), in order.
    headers: list[dict[str, str]] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def of_trace(self, trace_id: str) -> list[SpanDict]:
        """The spans received of one trace (32 hex digits), each time it was sent."""
        with self.changed:
            return [span for span in self.spans if span["trace_id"] == trace_id]

    def wait_for(self, found: Callable[[list[SpanDict]], bool], timeout: float = 30) -> bool:
        """Whether the spans received satisfy `found` within `timeout` seconds (woken by each
        request, not polled)."""
        with self.changed:
            return self.changed.wait_for(lambda: found(self.spans), timeout)

    def take(self, request: ExportTraceServiceRequest, headers: dict[str, str]) -> None:
        spans = [
            _span(span, _service(resource.resource.attributes))
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self.changed:
            self.spans += spans
            self.headers.append(headers)
            self.changed.notify_all()


def _values(pairs: Any) -> dict[str, Any]:
    return {pair.key: getattr(pair.value, str(pair.value.WhichOneof("value"))) for pair in pairs}


def _service(attributes: list[KeyValue]) -> str:
    return str(_values(attributes).get("service.name", ""))


def _span(span: Span, service: str) -> SpanDict:
    """A span with its ids in hex and its attributes as plain values."""
    return {
        "name": span.name,
        "service": service,
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_id": span.parent_span_id.hex() or None,
        "kind": Span.SpanKind.Name(span.kind),
        "attributes": _values(span.attributes),
        "events": [{"name": e.name, "attributes": _values(e.attributes)} for e in span.events],
        "status": {
            "code": Status.StatusCode.Name(span.status.code),
            "message": span.status.message,
        },
    }


@contextlib.contextmanager
def otlp_receiver() -> Iterator[Received]:
    """An OTLP/HTTP receiver: its base URL (for OTEL_EXPORTER_OTLP_ENDPOINT) and what it
    received at any path (a traces endpoint given as it is may name another one)."""
    received = Received()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            received.take(
                ExportTraceServiceRequest.FromString(body), headers | {":path": self.path}
            )
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    with serving(Handler) as received.url:
        yield received


@contextlib.contextmanager
def otlp_grpc_receiver() -> Iterator[Received]:
    """An OTLP/gRPC receiver (the collector's TraceService) on a loopback port: its URL
    (`http://127.0.0.1:<port>`, plain text as `http` tells the exporter) and what it got."""
    import grpc

    received = Received()

    class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: ExportTraceServiceRequest, context: Any) -> Any:
            received.take(request, {k: v for k, v in context.invocation_metadata()})
            return ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    received.url = f"http://127.0.0.1:{port}"
    try:
        yield received
    finally:
        server.stop(grace=None)
