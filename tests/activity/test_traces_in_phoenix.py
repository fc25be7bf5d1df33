"""Traces as a real backend receives them: Arize Phoenix, started for these tests, gets a
live turn's trace when the turn ends and a stored period's from `manage.py export_otel`,
and gives them back through its own API with our names, ids, times and statuses, and the
MCP session each call ran in."""

from __future__ import annotations

from datetime import datetime

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.utils import timezone

from activity import telemetry
from activity.models import ActivityFeed
from activity.telemetry import export
from chat.agent.mcp.config import spec_from_mapping
from chat.models import Conversation
from tests.support.mcp import http_server
from tests.support.phoenix import phoenix_or_skip, phoenix_server, spans_received, trace_spans
from tests.support.rows import answer_feed_id
from tests.support.traces import served_session
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    phoenix_or_skip()
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as url:
        yield url


def by_name(spans: list[dict]) -> dict[str, dict]:
    return {span["name"]: span for span in spans}


def test_a_live_turn_and_a_stored_period_reach_phoenix_with_their_recorded_times(
    settings, phoenix, alice, knowledge_base
):
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = ""
    earlier = run_turn(Conversation.objects.create(owner=alice), "How do I negotiate my salary?")
    boundary = timezone.now()
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = phoenix
    question = "Simulate a failure while looking up salaries"
    live = run_turn(Conversation.objects.create(owner=alice), question)
    assert export.processor().force_flush(30_000)

    feed = ActivityFeed.objects.get(pk=answer_feed_id(live))
    spans = by_name(spans_received(phoenix, telemetry.trace_id_hex(feed.pk, feed.started_at), 4))
    turn, tool = spans["invoke_agent glassbox"], spans["execute_tool search_documents"]
    assert turn["parent_id"] is None and tool["parent_id"] == turn["context"]["span_id"]
    assert tool["status_code"] == "ERROR" and not tool["status_message"]  # its text is content
    assert tool["attributes"]["error.type"] == "tool_error"
    assert tool["attributes"]["gen_ai.tool.name"] == "search_documents"
    assert turn["attributes"]["gen_ai.conversation.id"] == str(live.conversation_id)
    assert datetime.fromisoformat(turn["start_time"]) == feed.started_at

    old = ActivityFeed.objects.get(pk=answer_feed_id(earlier))
    old_trace = telemetry.trace_id_hex(old.pk, old.started_at)
    assert trace_spans(phoenix, old_trace) == []  # no endpoint then: nothing was sent
    call_command(
        "export_otel", "--since", old.started_at.isoformat(), "--until", boundary.isoformat()
    )
    spans = by_name(spans_received(phoenix, old_trace, 4))
    assert set(spans) == {
        "invoke_agent glassbox", "chat glassbox-demo", "execute_tool search_documents",
    }  # fmt: skip
    turn = spans["invoke_agent glassbox"]
    assert datetime.fromisoformat(turn["start_time"]) == old.started_at
    assert datetime.fromisoformat(turn["end_time"]) == old.finished_at
    assert turn["attributes"]["gen_ai.usage.input_tokens"] == old.prompt_tokens
    assert spans["execute_tool search_documents"]["status_code"] == "OK"


@pytest.mark.asyncio
async def test_an_mcp_calls_session_reaches_phoenix_live_and_from_export_otel(
    settings, phoenix, mcp_sessions, alice, alice_conversation
):
    with http_server(TESTBENCH_LEGACY="1") as url:
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "web", "url": url})]
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = ""
        earlier, stored = await served_session(alice_conversation, alice)
        boundary = timezone.now()
        await mcp_sessions.close()  # the next call runs in a session of its own
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = phoenix
        session, live = await served_session(alice_conversation, alice)
        assert await sync_to_async(export.processor().force_flush)(30_000)
    await sync_to_async(call_command)(
        "export_otel", "--since", stored.feed.started_at.isoformat(), "--until",
        boundary.isoformat(),
    )  # fmt: skip

    for said, result in ((session, live), (earlier, stored)):
        trace = telemetry.trace_id_hex(result.feed.pk, result.feed.started_at)
        spans = by_name(await sync_to_async(spans_received)(phoenix, trace, 4))
        tool = spans["execute_tool web__session"]
        assert tool["attributes"]["mcp.session.id"] == said
        assert tool["attributes"]["mcp.method.name"] == "tools/call"
    assert session != earlier
