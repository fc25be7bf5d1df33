"""What a test reads of the live presenter's ops (activity.presenting.live)."""

from __future__ import annotations

from activity.presenting.live import AddLine, Op, ReplaceLine
from activity.presenting.presentation import Line


def line_of(op: Op) -> Line:
    """The line an op adds or replaces; any other op fails the test."""
    assert isinstance(op, AddLine | ReplaceLine), f"{op!r} shows no line"
    return op.line
