"""A trace backend in the test's process: an OTLP/HTTP receiver on a loopback port that
decodes what the OpenTelemetry SDK's exporter sends (protobuf, as it goes to any backend) and
keeps each span as a dict (name, ids, attributes). The exporter waits for its answer, so once
a flush or an export returns, what it sent is here."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.loopback_http import QuietHandler, serving


@dataclass
class Received:
    url: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of_trace(self, trace_id: str) -> list[dict[str, Any]]:
        """The spans received of one trace (32 hex digits), each time it was sent."""
        with self.lock:
            return [span for span in self.spans if span["trace_id"] == trace_id]


def _span(span: Span) -> dict[str, Any]:
    """A span with its trace id in hex and its attributes as plain values."""
    attributes = {
        pair.key: getattr(pair.value, str(pair.value.WhichOneof("value")))
        for pair in span.attributes
    }
    return {"name": span.name, "trace_id": span.trace_id.hex(), "attributes": attributes}


@contextlib.contextmanager
def otlp_receiver() -> Iterator[Received]:
    """The receiver's base URL (for OTEL_EXPORTER_OTLP_ENDPOINT) and what it received."""
    received = Received()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            request = ExportTraceServiceRequest.FromString(body)
            spans = [
                _span(span)
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]
            with received.lock:
                received.spans += spans
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    with serving(Handler) as received.url:
        yield received
