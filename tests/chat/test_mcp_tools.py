"""Tools from real MCP servers (the `mcp` SDK on both sides, real processes): progress shown
live and kept, failures explained, Stop reaching the server, the tool list kept fresh."""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from activity.models import ActivityEvent
from chat.agent.mcp.config import spec_from_mapping
from chat.agent.mcp.connections import Connection, pool
from chat.models import Message
from tests.support.mcp import DEMO, http_server, stdio
from tests.support.ports import free_port
from tests.support.sockets import (
    ask,
    finish_turns,
    frames_until_done,
    json_turn,
    json_until_done,
    open_socket,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def bench(settings, sessions):
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench")]
    return sessions


def statuses(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "status"]


def text(events: list[dict]) -> str:
    return "".join(e["content"] for e in events if e["type"] == "text")


async def test_progress_is_live_numeric_and_kept_on_the_result(bench, alice, alice_conversation):
    events = await json_turn(alice_conversation, alice, 'bench__count {"steps": 4}')

    lines = statuses(events)
    assert lines[0]["message"] == "Running “Count steps”…" and lines[0]["tool"] == "bench__count"
    progress = [e for e in lines if "progress" in e]
    assert progress, "at least the first report is shown live"
    assert all("seq" not in e and e["total"] == 4 for e in progress)
    assert [e["progress"] for e in progress] == sorted(e["progress"] for e in progress)
    assert progress[0]["message"].startswith("Step ")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"] is True
    assert (result["progress"], result["total"], result["progress_count"]) == (4, 4, 4)
    assert result["progress_message"] == "Step 4 of 4"
    assert events[-1]["state"] == "complete"
    assert "counted to 4" in text(events)
    row = await ActivityEvent.objects.aget(kind="tool_result")
    assert (row.server, row.tool, row.progress, row.progress_total) == (
        "bench",
        "bench__count",
        4,
        4,
    )
    assert row.result_structured == {"result": "counted to 4"}


async def test_a_report_without_a_total_is_an_indeterminate_bar(bench, alice, alice_conversation):
    events = await json_turn(
        alice_conversation, alice, 'bench__count {"steps": 2, "known_total": false}'
    )

    progress = [e for e in statuses(events) if "progress" in e]
    assert progress and all("total" not in e for e in progress)


async def test_ten_thousand_reports_cost_no_more_writes_than_none(
    bench, alice, alice_conversation, settings
):
    # On a busy machine the server's 10,000 reports took longer than a tool's default 20 s.
    settings.GLASSBOX_TOOL_TIMEOUT = 240
    quiet = await json_turn(alice_conversation, alice, 'bench__flood {"count": 1}')
    rows_quiet = await ActivityEvent.objects.acount()
    loop = asyncio.get_running_loop()
    started = loop.time()
    flood = await json_turn(alice_conversation, alice, 'bench__flood {"count": 10000}', limit=240)
    seconds = loop.time() - started

    stored = [(e.kind, e.message) async for e in ActivityEvent.objects.order_by("pk")]
    assert len(stored) == 2 * rows_quiet, " | ".join(f"{k}: {m}" for k, m in stored[rows_quiet:])
    live = [e for e in statuses(flood) if "progress" in e]
    # At most five a second reach the page, whatever the server sends.
    assert 1 <= len(live) <= 5 * seconds + 2
    result = await ActivityEvent.objects.filter(kind="tool_result").order_by("pk").alast()
    assert result is not None
    assert (result.progress_count, result.progress) == (10000, 10000)
    assert quiet[-1]["state"] == flood[-1]["state"] == "complete"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_demo_server_compares_surveys_over_both_transports(
    transport, settings, sessions, alice, alice_conversation
):
    env = {"GLASSBOX_DEMO_MCP_DELAY": "0"}
    with http_server(DEMO, environment=env) if transport == "http" else _nothing() as url:
        settings.GLASSBOX_MCP_SERVERS = [
            spec_from_mapping({"name": "surveys", "url": url})
            if url
            else stdio("surveys", DEMO, **env)
        ]
        events = await json_turn(
            alice_conversation, alice, "Compare five salary surveys for an engineer"
        )

    lines = statuses(events)
    assert lines[0]["message"] == "Running “Compare salary surveys”…"
    assert (
        lines[1]["message"]
        == "Comparing salary surveys for “Compare five salary surveys engineer”"
    )
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert (result["progress"], result["total"], result["progress_count"]) == (5, 5, 5)
    assert result["progress_message"] == "Read survey 5 of 5: National Statistics Office"
    assert "the median for **engineer** is **58,000 €**" in text(events)
    assert "| Hays Salary Guide | 58,000 € |" in text(events)
    assert lines[-1]["icon"] == "✅"


class _nothing:
    def __enter__(self):
        return ""

    def __exit__(self, *exc):
        return False


async def test_an_error_result_is_explained_and_the_turn_completes(
    bench, alice, alice_conversation
):
    events = await json_turn(alice_conversation, alice, "bench__refuse")

    failed = [e for e in statuses(events) if e["state"] == "failed"]
    assert failed[0]["icon"] == "❌"
    assert failed[0]["message"] == (
        "“Refuse” failed (Error executing tool refuse: the ledger is locked for maintenance)"
    )
    assert [e["icon"] for e in statuses(events)][-5:] == ["❌", "🔄", "🔄", "✍️", "✅"]
    assert events[-1]["state"] == "complete"


async def test_a_result_without_result_type_is_read_as_complete(
    settings, sessions, alice, alice_conversation
):
    """A 2026-07-28 server may leave `resultType` out (SEP-2322): the listing and the call
    are read as complete ones, not refused by the SDK's check of the result."""
    settings.GLASSBOX_MCP_SERVERS = [stdio("bench", TESTBENCH_NO_RESULT_TYPE="1")]
    events = await json_turn(alice_conversation, alice, 'bench__count {"steps": 2}')

    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"] is True and result["progress_count"] == 2
    assert "counted to 2" in text(events)
    assert events[-1]["state"] == "complete"


async def test_a_protocol_error_is_explained(bench, alice, alice_conversation):
    events = await json_turn(alice_conversation, alice, "bench__protocol_error")

    failed = [e for e in statuses(events) if e["state"] == "failed"]
    assert failed[0]["message"] == (
        "“Break the protocol” failed (the bench server refused the call: the request was "
        "malformed)"
    )
    assert events[-1]["state"] == "complete"


async def test_a_server_that_dies_mid_call_fails_the_call_and_comes_back(
    bench, alice, alice_conversation
):
    events = await json_turn(alice_conversation, alice, "bench__crash")

    failed = [e for e in statuses(events) if e["state"] == "failed"]
    assert failed[0]["message"] == (
        "“Crash” failed (the bench server is unreachable: the connection was lost during the call)"
    )
    assert "🔄" in [e["icon"] for e in statuses(events)]
    assert events[-1]["state"] == "complete"
    # A new session is opened (with backoff); the next turn uses it.
    async with asyncio.timeout(15):
        await pool().connections["bench"].up.wait()
    again = await json_turn(alice_conversation, alice, 'bench__count {"steps": 1}')
    assert "counted to 1" in text(again)


async def test_a_call_past_the_tool_timeout_is_cancelled_on_the_server(
    bench, settings, tmp_path, alice, alice_conversation
):
    settings.GLASSBOX_TOOL_TIMEOUT = 0.5
    marker = tmp_path / "cancelled"
    events = await json_turn(alice_conversation, alice, f'bench__hang {{"marker": "{marker}"}}')

    failed = [e for e in statuses(events) if e["state"] == "failed"]
    assert failed[0]["message"] == "“Hang” failed (timed out after 0.5 s)"
    assert events[-1]["state"] == "complete"
    await _appears(marker)


async def test_stop_cancels_the_call_on_the_server(bench, tmp_path, alice, alice_conversation):
    marker = tmp_path / "cancelled"
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await ask(socket, f'bench__hang {{"marker": "{marker}"}}')
    events: list[dict[str, Any]] = []
    while "progress" not in events[-1:] and not any("progress" in e for e in events):
        events.append(json.loads(await socket.receive_from(timeout=20)))
    answer_id = next(e["message_id"] for e in events if e["type"] == "turn")
    await socket.send_to(text_data=json.dumps({"stop": answer_id}))
    events += await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert events[-1]["state"] == "stopped"
    await _appears(marker)
    answer = await Message.objects.aget(pk=answer_id)
    assert answer.state == Message.State.STOPPED


async def test_an_unreachable_server_never_blocks_turns_that_do_not_use_it(
    settings, sessions, alice, alice_conversation
):
    settings.GLASSBOX_MCP_SERVERS = [
        spec_from_mapping({"name": "down", "url": f"http://127.0.0.1:{free_port()}/mcp"}),
        stdio("bench"),
    ]
    events = await json_turn(alice_conversation, alice, 'bench__count {"steps": 1}')

    assert "counted to 1" in text(events)
    down = pool().connections["down"]
    assert down.client is None and down.reason == "it cannot be reached"
    assert not down.tools


async def test_http_servers_share_one_tls_context_however_many_sessions_open(monkeypatch):
    # Each context made anew reads the CA bundle: tens of milliseconds of everyone's loop,
    # each time a session opens.
    bundles_read = []
    read = ssl.SSLContext.load_verify_locations

    def counted(context, *args, **kwargs):
        bundles_read.append(args)
        return read(context, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    streamable = Connection(spec_from_mapping({"name": "one", "url": "https://a.example/mcp"}))
    legacy = Connection(spec_from_mapping({"name": "two", "url": "https://b.example/sse"}))
    for _session in range(3):
        streamable._client()
        legacy._legacy_http()  # what the SDK's legacy transport asks for its client
    await streamable.close()
    await legacy.close()

    assert len(bundles_read) <= 1


async def test_a_server_that_goes_away_is_no_longer_offered_to_the_model(
    settings, sessions, alice, alice_conversation
):
    with http_server() as url:
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "remote", "url": url})]
        first = await json_turn(alice_conversation, alice, 'remote__count {"steps": 1}')
    remote = pool().connections["remote"]
    async with asyncio.timeout(15):
        # Its change stream drops with it: the session is known lost without a call.
        while remote.up.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    events = await json_turn(alice_conversation, alice, 'remote__count {"steps": 1}')

    assert "counted to 1" in text(first)
    assert remote.tools == [] and remote.listed  # known, not offered
    assert not [e for e in events if e["type"] == "tool_call"]  # answered without it
    assert events[-1]["state"] == "complete"


async def test_the_tool_list_is_refreshed_when_the_server_changes_it(
    bench, alice, alice_conversation
):
    await json_turn(alice_conversation, alice, "bench__grow")
    connection = pool().connections["bench"]
    async with asyncio.timeout(10):
        # The server's change stream wakes the connection, which lists the tools again.
        while "grown" not in [tool.name for tool in connection.tools]:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    events = await json_turn(alice_conversation, alice, "bench__grown")

    assert "I was added later" in text(events)


async def test_only_the_allowed_tools_are_offered(settings, sessions, alice, alice_conversation):
    settings.GLASSBOX_MCP_SERVERS = [
        spec_from_mapping({**_bench_mapping(), "tools": ["count"]}),
    ]
    refused = await json_turn(alice_conversation, alice, "bench__refuse")
    allowed = await json_turn(alice_conversation, alice, 'bench__count {"steps": 1}')

    assert not [e for e in refused if e["type"] == "tool_call"]
    assert "counted to 1" in text(allowed)


def _bench_mapping() -> dict:
    spec = stdio("bench")
    return {"name": spec.name, "command": spec.command, "args": list(spec.args)}


async def _appears(path: Path) -> None:
    """The server leaves the file when the cancellation reaches it (another process: polled)."""
    async with asyncio.timeout(10):
        while not await asyncio.to_thread(path.exists):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    assert await asyncio.to_thread(path.read_text) == "cancelled"


async def test_the_admin_audits_mcp_calls_by_server(
    bench, admin_client, alice, alice_conversation
):
    await json_turn(alice_conversation, alice, 'bench__count {"steps": 3}')
    await json_turn(alice_conversation, alice, "bench__refuse")
    get = sync_to_async(lambda url: admin_client.get(url).content.decode())

    listing = await get("/admin/activity/toolcallrecord/")
    body = listing.split("<tbody>")[1]
    assert body.count(">bench</td>") == 2
    assert "&#x27;steps&#x27;: 3" in body and "counted to 3" in body
    assert '<td class="field-progress_count">3</td>' in body
    assert "the ledger is locked for maintenance" in body
    assert "?server=bench" in listing and "?server=-" in listing
    built_in = await get("/admin/activity/toolcallrecord/?server=-")
    assert ">bench</td>" not in built_in and "0 tool calls" in built_in
    row = await ActivityEvent.objects.filter(kind="tool_result", ok=True).aget()
    detail = await get(f"/admin/activity/toolcallrecord/{row.pk}/change/")
    assert "3 of 3: Step 3 of 3" in detail and "counted to 3" in detail
    dashboard = await get("/admin/activity/activityfeed/dashboard/")
    assert '<th scope="rowgroup" rowspan="3">bench</th>' in dashboard
    assert "<td>bench__count</td><td>1</td>" in dashboard


async def test_tools_are_namespaced_and_ask_for_feedback_first(bench):
    from chat.turns.deps import configured_tools

    tools = await configured_tools()
    count = tools.get("bench__count")
    assert tools.get("search_documents") is not None and count is not None
    function = count.schema["function"]
    assert function["description"] == "[bench] Counts to `steps`, reporting each step."
    parameters = function["parameters"]
    assert list(parameters["properties"])[:2] == ["feedback_to_user", "steps"]
    assert parameters["required"] == ["feedback_to_user", "steps"]
    assert str(count.labels.done) == "Ran “Count steps”"


async def test_arguments_are_checked_against_the_servers_schema_first(
    bench, alice, alice_conversation
):
    events = await json_turn(alice_conversation, alice, 'bench__count {"steps": "many"}')

    failed = [e for e in statuses(events) if e["state"] == "failed"]
    assert failed[0]["message"] == (
        "“Count steps” failed (argument 'steps' is invalid: 'many' is not of type 'integer')"
    )


async def test_results_reach_the_model_as_text_within_a_budget(
    bench, settings, alice, alice_conversation
):
    settings.GLASSBOX_MCP_RESULT_CHARS = 7
    await json_turn(alice_conversation, alice, 'bench__count {"steps": 2}')
    settings.GLASSBOX_MCP_RESULT_CHARS = 8000
    await json_turn(alice_conversation, alice, "bench__picture")

    cut, picture = [
        row.result_content
        async for row in ActivityEvent.objects.filter(kind="tool_result").order_by("pk")
    ]
    assert cut == "counted\n[cut: the result was 12 characters]"
    assert picture == "[an image (image/png) was left out]\na tiny picture"


async def test_the_page_shows_a_progress_bar_live_and_in_history(bench, alice, alice_conversation):
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, 'bench__count {"steps": 3}')
    frames = await frames_until_done(socket, 20)
    await finish_turns()
    await socket.disconnect()

    live = [f for f in frames if "<progress" in f and "state-in_progress" in f]
    assert live and re.search(
        r'<progress class="tool-progress" value="\d(\.0)?" max="3(\.0)?">', live[0]
    )
    page = await sync_to_async(_page)(alice, alice_conversation)
    assert re.search(
        r'<progress class="tool-progress" value="3(\.0)?" max="3(\.0)?">100%</progress>', page
    )


def _page(user, conversation, path: str = "") -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get(f"/c/{conversation.pk}/{path}").content.decode()


async def test_sse_clients_get_the_same_live_progress(bench, alice, alice_conversation, gate):
    from tests.support.api import ask as api_ask
    from tests.support.api import client_for, sse_events

    held = gate(after=0)
    response = await api_ask(
        await client_for(alice), alice_conversation, content='bench__count {"steps": 2}'
    )
    events = await sse_events(response, held=held)
    await finish_turns()

    progress = [e for e in statuses(events) if "progress" in e]
    assert progress and all(e["total"] == 2 and "seq" not in e for e in progress)
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["progress_count"] == 2
    assert events[-1]["state"] == "complete"


async def test_links_in_a_result_are_kept_for_the_audit_and_shown_on_the_tools_line(
    bench, alice, alice_conversation
):
    from activity.auditing.audit import feed_integrity
    from activity.models import ActivityFeed
    from tests.support.mcp_server import HOSTILE

    socket = await open_socket(alice_conversation, alice)
    await ask(socket, "bench__point")
    frames = "".join(await frames_until_done(socket, 20))
    await finish_turns()
    await socket.disconnect()
    events = await json_turn(alice_conversation, alice, "bench__point")

    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["links"] == [
        {
            "uri": "https://example.org/q3.pdf",
            "title": "Q3 report",
            "mime_type": "application/pdf",
        },
        {"uri": "javascript:window.pwned=4", "title": f"Click {HOSTILE}", "mime_type": ""},
        {"uri": "file:///srv/exports/chart.png", "title": "chart.png", "mime_type": "image/png"},
    ]
    row = await ActivityEvent.objects.filter(kind="tool_result").alatest("pk")
    assert row.result_links == result["links"]
    # The model reads where they are, so its answer can point there.
    assert "[a link to “Q3 report”: https://example.org/q3.pdf]" in row.result_content
    assert "[a resource was left out: file:///srv/exports/chart.png]" in row.result_content
    feed = await ActivityFeed.objects.aget(pk=row.feed_id)
    assert (await sync_to_async(feed_integrity)(feed)).intact

    page = await sync_to_async(_page)(alice, alice_conversation)
    for shown in (frames, page):  # live, and when the conversation is opened again
        assert (
            '<a href="https://example.org/q3.pdf" rel="nofollow noopener noreferrer" '
            'target="_blank" title="https://example.org/q3.pdf">Q3 report</a>'
        ) in shown
        # Not a web address: text, never a link; the markup it wrote is escaped.
        assert 'href="javascript:' not in shown and "<img src=x" not in shown
        assert "Click &lt;img src=x onerror=&quot;window.pwned=1&quot;&gt;</code>" in shown
        assert '<code title="file:///srv/exports/chart.png">chart.png</code>' in shown
    markdown = await sync_to_async(_page)(alice, alice_conversation, "export.md")
    assert (
        "— Q3 report: https://example.org/q3.pdf; Click &lt;img src=x "
        'onerror="window.pwned=1"&gt;: javascript:window.pwned=4; '
        "chart.png: file:///srv/exports/chart.png"
    ) in markdown
