"""An MCP call's tool span names the session it ran in (`mcp.session.id`) as a trace backend
receives it, live at the turn's end and from `manage.py export_otel`: the session a
Streamable HTTP server gave (real servers built with the `mcp` SDK say which one they
served); a server over stdio has none (tests/activity/test_telemetry.py)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.utils import timezone

from activity import telemetry
from activity.models import ActivityEvent
from chat.agent.mcp.config import spec_from_mapping
from chat.agent.mcp.sessions import kept_session_id
from tests.support.mcp import http_server
from tests.support.otlp import Received, otlp_receiver
from tests.support.traces import served_session


def tool_spans(received: Received, *results: ActivityEvent) -> list[dict]:
    """The tool spans received of these results' turns, turn by turn."""
    return [
        span
        for result in results
        for span in received.of_trace(
            telemetry.trace_id_hex(result.feed.pk, result.feed.started_at)
        )
        if span["name"] == "execute_tool web__session"
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_calls_span_names_the_session_that_ran_it_live_and_exported(
    settings, mcp_sessions, alice, alice_conversation, admin_client
):
    """Each call names its own session: the second runs in a new one (this process closed
    the first, as it does when the server's declaration changes)."""
    from activity.telemetry import export

    started = timezone.now()
    with http_server(TESTBENCH_LEGACY="1") as url, otlp_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "web", "url": url})]
        first, before = await served_session(alice_conversation, alice)
        await mcp_sessions.close()
        second, after = await served_session(alice_conversation, alice)
        assert await sync_to_async(export.flush)(10_000)
        live = tool_spans(backend, before, after)
        await sync_to_async(call_command)(
            "export_otel", "--since", started.isoformat(), "--until", timezone.now().isoformat()
        )
        both = tool_spans(backend, before, after)

    assert len(first) == len(second) == 32 and first != second
    assert (before.mcp_session_id, after.mcp_session_id) == (first, second)
    assert [span["attributes"]["mcp.session.id"] for span in live] == [first, second]
    assert [span["attributes"]["mcp.session.id"] for span in both] == [first] * 2 + [second] * 2
    assert {span["attributes"]["mcp.method.name"] for span in both} == {"tools/call"}
    page = await sync_to_async(admin_client.get)(
        f"/admin/activity/toolcallrecord/{after.pk}/change/"
    )
    assert second in page.content.decode() and first not in page.content.decode()


@pytest.mark.parametrize("given", [None, "", "has space", "tab\there", "é" * 8, "x" * 257, "\x7f"])
def test_a_session_id_the_spec_does_not_allow_is_not_kept(given):
    assert kept_session_id(given) == ""
    assert kept_session_id("3f2a-" + "x" * 251) == "3f2a-" + "x" * 251
