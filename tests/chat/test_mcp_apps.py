"""MCP Apps with a real server built with the SDK's `Apps` (a process, over stdio): Glassbox
declares the extension, and a tool only its app may call is never offered to the model."""

from __future__ import annotations

import hashlib

import mcp_types as types
import pytest
from asgiref.sync import sync_to_async

from activity.models import ActivityEvent, ModelCall
from chat.agent.mcp.apps import AppUi, app_ui, offered_to_model
from tests.support.apps_server import CHART_HTML, CHART_URI
from tests.support.audit import sql, verify
from tests.support.mcp import stdio
from tests.support.sockets import json_turn

APPS = "tests.support.apps_server"


@pytest.fixture
def charts(settings, sessions):
    settings.GLASSBOX_MCP_SERVERS = [stdio("charts", APPS)]
    return sessions


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_server_knows_the_host_shows_its_apps(charts, alice, alice_conversation):
    events = await json_turn(alice_conversation, alice, 'charts__show_chart {"role": "engineer"}')

    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"] is True
    assert result["summary"] == "Chart of engineer salaries (with its app)"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_tool_only_its_app_may_call_is_never_offered_to_the_model(
    charts, alice, alice_conversation
):
    events = await json_turn(alice_conversation, alice, 'charts__refresh_chart {"months": 2}')

    offered = await sync_to_async(
        lambda: [n for call in ModelCall.objects.all() for n in call.tools_offered]
    )()
    assert "charts__show_chart" in offered and "charts__hostile_view" in offered
    assert "charts__refresh_chart" not in offered
    calls = [e["tool"] for e in events if e["type"] == "tool_call"]
    assert "charts__refresh_chart" not in calls
    assert "Refreshed" not in str(events)


def tool(meta: dict | None) -> types.Tool:
    return types.Tool(name="t", input_schema={"type": "object"}, _meta=meta)


@pytest.mark.parametrize(
    ("meta", "read"),
    [
        (None, None),
        ({"ui": "ui://x"}, None),
        ({"ui": {"resourceUri": "https://example.com/app.html"}}, None),
        ({"ui": {"resourceUri": "ui://" + "x" * 3000}}, None),
        ({"ui": {"resourceUri": 7}}, None),
        ({"ui": {"resourceUri": "ui://a/b.html"}}, AppUi("ui://a/b.html")),
        ({"ui": {"resourceUri": "ui://a", "visibility": ["app"]}}, AppUi("ui://a", ("app",))),
        ({"ui": {"resourceUri": "ui://a", "visibility": ["model"]}}, AppUi("ui://a", ("model",))),
        ({"ui": {"resourceUri": "ui://a", "visibility": "app"}}, AppUi("ui://a")),
        ({"ui": {"resourceUri": "ui://a", "visibility": ["nobody"]}}, AppUi("ui://a")),
        ({"ui": {"resourceUri": "ui://a", "visibility": []}}, AppUi("ui://a")),
    ],
)
def test_a_tools_interface_is_read_from_what_it_declares(meta, read):
    assert app_ui(tool(meta)) == read


def test_a_malformed_declaration_never_hides_a_tool_from_the_model():
    assert offered_to_model(tool({"ui": {"resourceUri": "ui://a", "visibility": ["nobody"]}}))
    assert offered_to_model(tool({"ui": {"resourceUri": "nope", "visibility": ["app"]}}))
    assert not offered_to_model(tool({"ui": {"resourceUri": "ui://a", "visibility": ["app"]}}))


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_apps_html_is_kept_sealed_with_the_call_that_showed_it(
    charts, alice, alice_conversation
):
    events = await json_turn(alice_conversation, alice, 'charts__show_chart {"role": "engineer"}')

    (shown,) = [e for e in events if e["type"] == "app"]
    row = await ActivityEvent.objects.aget(kind="app")
    assert shown["call_id"] == row.call_id and shown["uri"] == CHART_URI
    assert "html" not in shown, "the HTML is served in its frame, never on the wire"
    assert row.result_content == CHART_HTML
    assert shown["sha256"] == hashlib.sha256(CHART_HTML.encode()).hexdigest()
    assert shown["csp"] == {"connectDomains": ["https://api.example.com"]}
    assert (await sync_to_async(verify)())[0] == 0
    await sync_to_async(sql)(
        "UPDATE activity_activityevent SET result_content = %s WHERE id = %s",
        CHART_HTML.replace("Salary chart", "Pay here"),
        row.pk,
    )
    assert (await sync_to_async(verify)())[0] != 0, "a changed app breaks the chain"
