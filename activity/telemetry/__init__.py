"""OpenTelemetry traces of the agent's turns, as the GenAI semantic conventions name them
(`invoke_agent` → `chat <model>` → `execute_tool <name>`), built from the stored feed: a turn
that just ended and any stored period give the same spans (spans.py), sent through the
OpenTelemetry SDK to OTEL_EXPORTER_OTLP_ENDPOINT (export.py).

This package's own module imports nothing of OpenTelemetry: with no endpoint set, the SDK is
never imported and a turn pays one settings lookup."""

from __future__ import annotations

from django.conf import settings

from activity.telemetry.ids import trace_id_hex

__all__ = ["enabled", "trace_id_hex", "turn_ended"]


def enabled() -> bool:
    return bool(settings.OTEL_EXPORTER_OTLP_ENDPOINT)


def turn_ended(feed_id: int) -> None:
    """A turn's feed was closed: its trace goes out (in the database thread; the network is
    the SDK's batch thread's)."""
    if not enabled():
        return
    from activity.telemetry import export

    export.turn_export(feed_id)
