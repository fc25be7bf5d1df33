"""OpenTelemetry traces of the agent's turns, as the GenAI semantic conventions name them
(`invoke_agent` → `chat <model>` → `execute_tool <name>`), built from the stored feed: a turn
that just ended and any stored period give the same spans (spans.py), sent through the
OpenTelemetry SDK's OTLP exporter, configured by the standard OTEL_* variables (export.py).

This package's own module imports nothing of OpenTelemetry: with no endpoint set (or the SDK
disabled), the SDK is never imported and a turn pays two settings lookups."""

from __future__ import annotations

from django.conf import settings

from activity.telemetry.ids import trace_id_hex

__all__ = ["enabled", "trace_id_hex", "turn_ended"]


def enabled() -> bool:
    """Whether a traces endpoint is set and the SDK not disabled (OTEL_SDK_DISABLED)."""
    endpoint = settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or settings.OTEL_EXPORTER_OTLP_ENDPOINT
    return bool(endpoint) and not settings.OTEL_SDK_DISABLED


def turn_ended(feed_id: int) -> None:
    """A turn's feed was closed: its trace goes out (in the database thread; the network is
    the SDK's batch thread's)."""
    if not enabled():
        return
    from activity.telemetry import export

    export.turn_export(feed_id)
