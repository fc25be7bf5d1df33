"""An MCP server's log messages (`notifications/message`) during a call, made fit for the
call's detail lines: the server's words are untrusted, so each is cleaned and cut, and a
server that floods is bounded where it is read (chat.agent.mcp.stdio) and where it is kept
(chat.agent.running)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types

from activity.recording.events import LOG_DATA_CHARS, LOGGER_CHARS
from chat.agent.tools import LogSink
from chat.agent.untrusted import fits, one_line

# What a message's data may be to be kept: its JSON, roughly, looked at no further than this.
DATA_LIMIT = 4096
# The level Glassbox asks servers to send from (2026-07-28 servers send nothing unasked):
# all of them; each reader's preference filters what they see, and the bounds what is kept.
ASKED_LEVEL = "debug"
# Log messages a stdio connection's reader parses for each call running on it; more are only
# counted (a byte search each), as all are while no call runs.
PARSED_PER_CALL = 500

Logged = Callable[[types.LoggingMessageNotificationParams], None]


def log_text(data: Any) -> str:
    """The message as one line of text: a string as it is, anything else as JSON."""
    if not isinstance(data, str):
        if not fits(data, DATA_LIMIT):
            return f"[{DATA_LIMIT // 1024} KB+]"
        data = json.dumps(data, ensure_ascii=False, default=str)
    return one_line(data, LOG_DATA_CHARS)


def to_sink(sink: LogSink) -> Logged:
    """The connection's callback for one call: each message cleaned into `sink`."""

    def logged(params: types.LoggingMessageNotificationParams) -> None:
        sink.report(
            str(params.level), log_text(params.data), one_line(params.logger or "", LOGGER_CHARS)
        )

    return logged
