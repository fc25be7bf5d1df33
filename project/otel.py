"""OpenTelemetry's standard variables for traces, as the settings read them: which protocol
and which endpoint. The SDK's exporters read the others (headers, timeout, compression,
certificates) themselves; this is where the endpoint is resolved as the specification says,
so the settings can say when traces are off and the exporter is handed what the SDK would
have chosen."""

from __future__ import annotations

PROTOCOLS = ("http/protobuf", "grpc")


def traces_protocol(traces: str, general: str) -> str:
    """OTEL_EXPORTER_OTLP_TRACES_PROTOCOL over OTEL_EXPORTER_OTLP_PROTOCOL; OTLP/HTTP with
    protobuf when neither is set (this project's default, which needs no gRPC)."""
    protocol = (traces or general or "http/protobuf").strip()
    if protocol not in PROTOCOLS:
        raise ValueError(f"the protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    return protocol


def traces_endpoint(*, traces: str, base: str, protocol: str) -> str:
    """OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is; else OTEL_EXPORTER_OTLP_ENDPOINT, with the
    traces path added for OTLP/HTTP (gRPC has no path); empty when neither is set."""
    if traces:
        return traces
    if not base or protocol == "grpc":
        return base
    return base.rstrip("/") + "/v1/traces"
