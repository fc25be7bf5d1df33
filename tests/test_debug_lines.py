"""Autobahn's debug line about a socket's settings is pretty-printed only when it is written
(project.debug_lines): a socket opening pays nothing for a line nobody logs, and a line that
is logged reads as before."""

from __future__ import annotations

from pprint import pformat

from autobahn.websocket import protocol
from twisted.logger import formatEvent

from project import debug_lines


class Counted:
    def __init__(self) -> None:
        self.asked = 0

    def __repr__(self) -> str:
        self.asked += 1
        return "counted"


def test_the_settings_are_printed_when_the_line_is_written_not_when_the_socket_opens():
    debug_lines.install()
    value = Counted()
    settings = [("openHandshakeTimeout", 5, "WebSocketServerFactory"), ("custom", value, "x")]
    line = protocol.pformat(settings)
    assert value.asked == 0
    written = formatEvent({"log_format": "\n{attrs}", "attrs": line})  # Twisted's logger
    assert value.asked > 0
    assert written == "\n" + pformat(settings)


def test_timings_still_print_as_pformat_does():
    debug_lines.install()
    timings = protocol.Timings()
    timings.track("onOpen")
    assert str(timings) == pformat(timings._timings)
    assert "onOpen" in str(timings)
