"""W3C trace context for the requests a turn makes to MCP servers (the `_meta.traceparent`
of the MCP spec's `_meta` convention), so a server's own spans join the turn's trace as
children of the call's tool span: the ids are the exported ones (activity.telemetry.ids),
one trace per turn, stable across its rounds, pauses and resumes, one span per tool call.

A call's task runs with that span as OpenTelemetry's current span (a non-recording one: the
spans themselves are exported from the stored feed when the turn ends), and the `mcp` SDK
injects it into each request through the configured propagator (`OTEL_PROPAGATORS`, W3C
trace context by default; `mcp.shared._otel.inject_trace_context`). Under a tracer provider
that records, the SDK's own `MCP send` span sits between the two, in the same trace."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING

from activity.telemetry.ids import tool_span_id

if TYPE_CHECKING:
    from opentelemetry.trace import SpanContext

_trace: contextvars.ContextVar[int | None] = contextvars.ContextVar("trace_turn", default=None)


def trace_turn(trace_id: int) -> None:
    """Names the trace (activity.telemetry.ids.trace_id) of the turn that the current task,
    and the tasks it starts, work for."""
    _trace.set(trace_id)


def call_span(trace_id: int, call: str) -> SpanContext:
    """The exported tool span of a call, as a parent that another process may continue."""
    # OpenTelemetry's API is imported with a turn's first call, not with the server (the
    # `mcp` SDK, which needs it too, waits for a server to be used).
    from opentelemetry import trace

    return trace.SpanContext(
        trace_id,
        tool_span_id(trace_id, call),
        is_remote=False,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
    )


def trace_call(context: contextvars.Context, call: str) -> None:
    """Makes the tool span of `call` the current span of a task started in `context`."""
    trace_id = context.run(_trace.get)
    if trace_id is None:
        return
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    span = trace.NonRecordingSpan(call_span(trace_id, call))
    # Never detached: the context is the call's task's own copy and ends with it.
    context.run(otel_context.attach, trace.set_span_in_context(span))
