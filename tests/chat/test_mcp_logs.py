"""An MCP server's log messages (`notifications/message`) during a call: detail lines under
the call's line, live while it runs and after a reload, at the level its reader chose; stored
as events, bounded, cleaned and escaped. A real server (tests.support.mcp_server, built with
the `mcp` SDK) logs at six levels during its `migrate` tool."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from activity.models import ActivityEvent, FeedPreferences
from chat.agent.mcp.config import spec_from_mapping
from chat.models import Conversation
from tests.support.mcp import http_server, stdio
from tests.support.mcp_server import HOSTILE
from tests.support.sockets import ask, finish_turns, frames_until, json_turn, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

LOGS = re.compile(r'<ul class="logs">(.*?)</ul>', re.S)
ENTRY = re.compile(r'<li class="log level-(\w+)">(.*?)</li>', re.S)


def logs_in(html: str) -> list[tuple[str, str]]:
    """Each log line shown: its level and its text, tags taken out."""
    (shown,) = LOGS.findall(html)
    return [(level, re.sub(r"<[^>]+>", "", text)) for level, text in ENTRY.findall(shown)]


def page_of(user, conversation, path: str = "") -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/c/{conversation.pk}/{path}").content.decode()


@pytest.fixture
def bench(settings, sessions):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]


async def test_log_lines_show_under_the_running_call_at_the_readers_level_and_after_reload(
    bench, alice, alice_conversation, tmp_path
):
    gate = tmp_path / "gate"
    page = await open_socket(alice_conversation, alice)
    await ask(page, "bench__migrate " + json.dumps({"gate": str(gate)}))
    # The call is still running (its server waits at the gate): the lines came with it.
    frames = await frames_until(page, lambda frame: "level-critical" in frame, limit=30)
    gate.write_text("open")
    await frames_until(page, lambda frame: 'class="message assistant state-complete' in frame)
    await page.disconnect()

    live = logs_in(frames[-1])
    assert 'class="line state-in_progress"' in frames[-1]  # the call's running line
    # The default level is warning: debug, info and notice are recorded, not shown.
    assert [level for level, _ in live] == ["warning", "error", "critical"]
    warning, error, critical = (text for _, text in live)
    assert warning == f"warning schema table {HOSTILE} has no index".replace("<", "&lt;").replace(
        ">", "&gt;"
    ).replace('"', "&quot;")
    assert (
        error
        == "error db {&quot;table&quot;: &quot;audit&quot;, &quot;error&quot;: &quot;locked&quot;}"
    )
    # Controls and NUL are out, the line break is a space, and a long message is cut.
    assert critical.startswith("critical db bell and NUL in a line that goes on and on")
    assert critical.endswith("…") and len(critical) <= len("critical db ") + 400

    kept = await sync_to_async(page_of)(alice, alice_conversation)
    assert logs_in(kept) == live
    markdown = await sync_to_async(page_of)(alice, alice_conversation, "export.md")
    assert "\n  - warning schema: table &lt;img src=x onerror=" in markdown
    assert "\n  - info " not in markdown  # the reader's level, as on the page

    await FeedPreferences.objects.acreate(user=alice, overrides={"MCP_LOG_LEVEL": "debug"})
    everything = logs_in(await sync_to_async(page_of)(alice, alice_conversation))
    assert [level for level, _ in everything] == [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
    ]
    assert everything[2] == ("notice", "notice orders: 1,204 rows")  # no logger, none shown


async def test_programs_get_every_log_message_and_the_record_keeps_them_sealed(
    bench, alice, alice_conversation
):
    events = await json_turn(alice_conversation, alice, "bench__migrate {}", limit=30)

    logs = [event for event in events if event["type"] == "tool_log"]
    (call,) = [event for event in events if event["type"] == "tool_call"]
    assert [log["level"] for log in logs] == [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
    ]
    assert {(log["call_id"], log["server"]) for log in logs} == {(call["call_id"], "bench")}
    result = events.index(next(e for e in events if e["type"] == "tool_result"))
    assert all(events.index(log) < result for log in logs)  # during the call, not after
    rows = await sync_to_async(list)(ActivityEvent.objects.filter(kind="tool_log"))
    assert [row.to_event().level for row in rows] == [log["level"] for log in logs]
    assert all(row.chain for row in rows)
    # The logger's name is the server's words, kept with the text: an erasure empties both.
    assert rows[0].tool == "" and rows[0].arguments == {"logger": "db"}


async def test_a_flood_of_log_messages_keeps_ten_of_each_level_and_says_how_many_were_not(
    bench, alice, alice_conversation
):
    events = await json_turn(
        alice_conversation, alice, 'bench__migrate {"chatter": 300}', limit=60
    )

    logs = [event for event in events if event["type"] == "tool_log"]
    assert [log["level"] for log in logs].count("debug") == 10
    assert len(logs) == 15  # the five other levels, one each
    done = next(e for e in events if e["type"] == "status" and e["state"] == "done")
    assert done["message"].endswith("the server sent 306 log messages; 291 were not kept")
    assert await ActivityEvent.objects.filter(kind="tool_log").acount() == 15


@pytest.mark.parametrize("legacy", [{}, {"TESTBENCH_LEGACY": "1"}], ids=["2026", "2025"])
async def test_a_server_over_http_logs_to_its_call_in_either_protocol(
    settings, sessions, alice, alice_conversation, legacy
):
    with http_server(**legacy) as url:
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "bench", "url": url})]
        events = await json_turn(alice_conversation, alice, "bench__migrate {}", limit=30)

    logs = [event for event in events if event["type"] == "tool_log"]
    assert [log["level"] for log in logs] == [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
    ]
    assert logs[3]["data"] == f"table {HOSTILE} has no index"


async def json_until(socket, found, limit: float = 30) -> list[dict]:
    events: list[dict] = []
    async with asyncio.timeout(limit):
        while not events or not found(events[-1]):
            events.append(json.loads(await socket.receive_from(timeout=limit)))
    return events


async def test_a_message_sent_while_two_users_calls_run_is_shown_to_neither(
    bench, alice, bob, alice_conversation, tmp_path
):
    """A log message names no call: with another user's call running on the same server it
    could be theirs, so it is counted on the closing line, never shown."""
    bobs_conversation = await Conversation.objects.acreate(owner=bob)
    first, second = tmp_path / "first", tmp_path / "second"
    alices = await open_socket(alice_conversation, alice, as_json=True)
    await ask(alices, "bench__migrate " + json.dumps({"gate": str(first)}))
    before = await json_until(alices, lambda e: e.get("level") == "critical")
    bobs = await open_socket(bobs_conversation, bob, as_json=True)
    # Bob's call logs while Alice's still runs (her server waits at her gate).
    await ask(bobs, "bench__migrate " + json.dumps({"gate": str(second)}))
    second.write_text("open")
    bobs_events = await json_until(bobs, lambda e: e["type"] == "done")
    first.write_text("open")
    alices_events = before + await json_until(alices, lambda e: e["type"] == "done")
    await finish_turns()
    await alices.disconnect()
    await bobs.disconnect()

    assert not [e for e in bobs_events if e["type"] == "tool_log"]
    bobs_done = next(e for e in bobs_events if e["type"] == "status" and e["state"] == "done")
    assert bobs_done["message"].endswith("the server sent 6 log messages; 6 were not kept")
    alices_logs = [e for e in alices_events if e["type"] == "tool_log"]
    assert len(alices_logs) == 6
    assert await ActivityEvent.objects.filter(kind="tool_log").acount() == 6
