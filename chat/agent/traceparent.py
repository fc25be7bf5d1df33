"""W3C trace context for the requests a turn makes to MCP servers (the `_meta.traceparent`
of the MCP spec's `_meta` convention), so a server's own traces join the turn's: one trace id
per turn, stable across its rounds, pauses and resumes; one span id per tool call.

Both ids are derived (a keyed hash of the turn and of the call, so they reveal neither), not
recorded: `traceparent_for` is the one place to feed them from a real tracing span later.
When OpenTelemetry is set up with a recording span, the MCP SDK writes that span's context
over this one (`mcp.shared._otel.inject_trace_context`)."""

from __future__ import annotations

import contextvars

from django.utils.crypto import salted_hmac

VERSION = "00"
SAMPLED = "01"
_turn: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace_turn", default=None)
_call: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace_call", default=None)


def traceparent_for(turn: str, call: str) -> str:
    """`00-<trace id>-<span id>-01`: the trace id from the turn alone, the span id from the
    turn and the call (ids of zeros are invalid in W3C trace context, hence the `or`)."""
    trace_id = _hex(f"turn:{turn}", 32) or "1".rjust(32, "0")
    span_id = _hex(f"call:{turn}:{call}", 16) or "1".rjust(16, "0")
    return f"{VERSION}-{trace_id}-{span_id}-{SAMPLED}"


def _hex(value: str, length: int) -> str:
    digest = salted_hmac("glassbox.traceparent", value, algorithm="sha256").hexdigest()[:length]
    return "" if set(digest) == {"0"} else digest


def trace_turn(turn: str) -> None:
    """Names the turn that the current task (and the tasks it starts) works for."""
    _turn.set(turn)


def trace_call(context: contextvars.Context, call: str) -> None:
    """Names the tool call that a task started in `context` runs."""
    context.run(_call.set, call)


def call_meta() -> dict[str, str] | None:
    """The `_meta` of the current tool call's MCP request; None outside a turn's call."""
    turn, call = _turn.get(), _call.get()
    if turn is None or call is None:
        return None
    return {"traceparent": traceparent_for(turn, call)}
