"""Autobahn's debug lines, formatted only when one is logged.

As each socket opens, Autobahn pretty-prints its 29 settings for a debug line whether debug
lines are logged or not: 0.2 ms a socket, about a hundredth of a turn's CPU at 100 sessions
(py-spy). Its `pformat` now hands the logger a value that is pretty-printed when the line is
written; its timings, whose text is that of `pformat`, still print as before."""

from __future__ import annotations

from pprint import pformat
from typing import Any


class Formatted:
    """`pformat(value)` once something asks for the text."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return pformat(self.value)


def install() -> None:
    from autobahn.websocket import protocol

    protocol.pformat = Formatted  # type: ignore[assignment]
    protocol.Timings.__str__ = lambda self: pformat(self._timings)  # type: ignore[method-assign]
