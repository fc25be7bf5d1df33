"""Where an MCP server's log messages are bounded: the stdio reader parses them only for a
running call, and none too long; a call keeps ten of each level; each is one clean line."""

from __future__ import annotations

import json

import mcp_types as types

from activity.recording.events import LOG_DATA_CHARS
from chat.agent.mcp.logs import DATA_LIMIT, log_text, to_sink
from chat.agent.mcp.stdio import LOG_LINE_LIMIT, Traffic, parse_line
from chat.agent.running import LOGS_PER_LEVEL, Logs


def log_line(data: object) -> bytes:
    message = {"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "error", "logger": "db", "data": data}}  # fmt: skip
    return json.dumps(message).encode()


def test_the_reader_parses_a_log_message_only_while_a_call_has_budget_for_it():
    traffic = Traffic()
    assert parse_line(log_line("idle"), traffic) is None and traffic.logs == 1
    traffic.log_budget = 1
    parsed = parse_line(log_line("during a call"), traffic)
    assert parsed is not None and parsed.message.params["data"] == "during a call"
    assert parse_line(log_line("one too many"), traffic) is None
    assert (traffic.logs, traffic.log_budget) == (2, 0)


def test_a_log_line_too_long_to_parse_is_only_counted():
    traffic = Traffic(log_budget=10)
    assert parse_line(log_line("x" * LOG_LINE_LIMIT), traffic) is None
    assert (traffic.logs, traffic.log_budget) == (1, 10)


def test_a_call_keeps_ten_messages_of_each_level_and_counts_the_rest():
    logs = Logs("c1", "bench")
    for n in range(LOGS_PER_LEVEL + 5):
        logs.report("debug", f"row {n}", "db")
    logs.report("error", "disk full", "db")
    logs.report("loud", "not a level", "db")
    kept = logs.take()
    assert [entry.level for entry in kept] == ["debug"] * LOGS_PER_LEVEL + ["error"]
    assert logs.dropped == 6 and logs.take() == []


def test_each_message_is_one_clean_line_whatever_the_server_sent():
    assert log_text("a\x00b\x07c\u202e\nd\te") == "abc d e"
    assert log_text({"k": [1, "<b>"]}) == '{"k": [1, "<b>"]}'
    assert len(log_text("y" * 5000)) == LOG_DATA_CHARS and log_text("y" * 5000).endswith("…")
    assert log_text(["z" * 100] * (DATA_LIMIT // 50)) == "[4 KB+]"
    logs = Logs("c1", "bench")
    to_sink(logs)(
        types.LoggingMessageNotificationParams(level="warning", data="ok", logger="l\x00" * 70)
    )
    (entry,) = logs.take()
    assert entry.logger == "l" * 63 + "…" and entry.server == "bench"
