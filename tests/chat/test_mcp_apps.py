"""MCP Apps with a real server built with the SDK's `Apps` (a process, over stdio): Glassbox
declares the extension, and a tool only its app may call is never offered to the model."""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import timedelta

import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client
from django.utils import timezone

from activity.models import ActivityEvent, ModelCall
from activity.recording.events import AppView, Decision, from_json, to_json
from activity.recording.receipts import fingerprint_or_blank
from activity.telemetry.spans import Options, trace_plan
from chat.agent.mcp.apps import DOMAINS_PER_KEY, AppUi, app_ui, declared_csp, offered_to_model
from chat.api.standards.agui import AguiWire
from chat.api.standards.ui_stream import UiStreamWire
from chat.models import Message, ToolApproval
from chat.turns import app_calls, resuming
from chat.turns.history import amodel_history
from tests.support.apps_server import CHART_HTML, CHART_URI
from tests.support.audit import sql, verify
from tests.support.mcp import stdio
from tests.support.responses import streamed
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


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_frame_is_served_sandboxed_to_its_owner_with_only_what_the_app_declared(
    charts, alice, bob, alice_conversation
):
    events = await json_turn(alice_conversation, alice, 'charts__show_chart {"role": "analyst"}')
    (shown,) = [e for e in events if e["type"] == "app"]
    message_id = await Message.objects.filter(role="assistant").values_list("pk", flat=True).aget()
    frame = f"/apps/{message_id}/{shown['call_id']}/"

    def fetched(user, path):
        return client_of(user).get(path)

    page = await sync_to_async(fetched)(alice, frame)
    assert page.status_code == 200 and page.content.decode() == CHART_HTML
    policy = page["Content-Security-Policy"]
    assert policy.startswith("sandbox allow-scripts; default-src 'none';")
    assert "allow-same-origin" not in policy and "'self'" not in policy.replace(
        "frame-ancestors 'self'", ""
    )
    assert "connect-src https://api.example.com;" in policy
    assert "frame-src 'none'" in policy and "base-uri 'none'" in policy
    assert page["X-Content-Type-Options"] == "nosniff"
    assert page["X-Frame-Options"] == "SAMEORIGIN"
    context = await sync_to_async(fetched)(alice, frame + "context/")
    assert context.json()["arguments"] == {"role": "analyst"}
    assert context.json()["result"]["content"] == [
        {"type": "text", "text": "Chart of analyst salaries (with its app)"}
    ]
    for path in (frame, frame + "context/", f"/apps/{message_id}/no-such-call/"):
        assert (await sync_to_async(fetched)(bob, path)).status_code == 404
    assert (await sync_to_async(fetched)(alice, f"/apps/{message_id}/nope/")).status_code == 404


def test_only_https_origins_are_kept_of_what_an_app_declares_and_only_so_many():
    declared = {
        "connectDomains": [
            "https://api.example.com/",
            "http://plain.example.com",
            "https://a.example.com/path",
            "'unsafe-eval'",
            "https://*.cdn.example.com",
            "https://x.example.com; script-src *",
            "*",
            7,
        ],
        "resourceDomains": [f"https://r{n}.example.com" for n in range(40)],
        "frameDomains": "https://one.example.com",
        "other": ["https://b.example.com"],
    }
    kept = declared_csp({"ui": {"csp": declared}})
    assert kept["connectDomains"] == ("https://api.example.com", "https://*.cdn.example.com")
    assert len(kept["resourceDomains"]) == DOMAINS_PER_KEY
    assert set(kept) == {"connectDomains", "resourceDomains"}
    assert declared_csp(None) == {} and declared_csp({"ui": {"csp": "all"}}) == {}


async def a_shown_chart(alice, alice_conversation) -> str:
    """The frame's address of a chart the model showed in a turn of alice's."""
    events = await json_turn(alice_conversation, alice, 'charts__show_chart {"role": "manager"}')
    (shown,) = [e for e in events if e["type"] == "app"]
    message_id = await Message.objects.filter(role="assistant").values_list("pk", flat=True).aget()
    return f"/apps/{message_id}/{shown['call_id']}/"


async def called(user, frame: str, name: str, arguments: object) -> dict:
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.post(
        frame + "call/", {"name": name, "arguments": arguments}, content_type="application/json"
    )
    if response.status_code == 202:
        return {"status": 202, **response.json()}
    return response.json() if response.status_code == 200 else {"status": response.status_code}


async def app_rows() -> list[ActivityEvent]:
    return [row async for row in ActivityEvent.objects.filter(call_id__startswith="app-")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_apps_call_runs_on_its_own_server_written_ahead_marked_and_sealed(
    charts, alice, alice_conversation
):
    frame = await a_shown_chart(alice, alice_conversation)

    answer = await called(alice, frame, "refresh_chart", {"months": 3})

    assert answer["result"]["content"] == [{"type": "text", "text": "Refreshed 3 months"}]
    assert answer["result"]["isError"] is False
    call, result, line = await app_rows()
    assert (call.kind, call.state, call.tool) == ("tool_call", "app", "charts__refresh_chart")
    assert call.arguments == {"months": 3}
    assert call.seq < result.seq < line.seq and result.ok is True
    assert line.message == "From the app: “Refresh the chart” finished"
    assert (await sync_to_async(verify)())[0] == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_app_reaches_no_other_servers_tool_and_no_unknown_one(
    charts, alice, bob, alice_conversation
):
    frame = await a_shown_chart(alice, alice_conversation)

    other = await called(alice, frame, "bench__echo", {"text": "stolen"})
    malformed = await called(alice, frame, "refresh_chart", "all")
    not_hers = await called(bob, frame, "show_chart", {"role": "x"})

    assert other["error"]["message"] == "charts has no tool bench__echo that its app may call"
    assert malformed["error"]["message"] == "a call needs a tool's name and its arguments"
    assert not_hers == {"status": 404}
    assert await app_rows() == []


async def asked_first(settings, alice, alice_conversation) -> tuple[str, dict]:
    """A shown chart whose app asked for a call that asks first: its frame, and the 202."""
    frame = await a_shown_chart(alice, alice_conversation)
    settings.GLASSBOX_APPROVAL = {"charts__refresh_chart": True}
    return frame, await called(alice, frame, "refresh_chart", {"months": 4})


async def outcome_of(user, waiting: dict) -> dict:
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get(waiting["outcome"])
    return response.json() if response.status_code == 200 else {"status": response.status_code}


async def decided(user, conversation, call_id: str, body: dict) -> int:
    """A program's decision over REST, and the call it lets go on run to its end."""
    client = AsyncClient()
    await client.aforce_login(user)
    url = f"/api/conversations/{conversation.pk}/approvals/{call_id}/"
    response = await client.post(url, body, content_type="application/json")
    await asyncio.gather(*app_calls.running())
    return response.status_code


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_apps_call_that_asks_first_waits_written_ahead_with_its_card_and_in_the_inbox(
    charts, settings, alice, alice_conversation
):
    frame, waiting = await asked_first(settings, alice, alice_conversation)

    assert waiting["status"] == 202 and waiting["waiting"].startswith("app-")
    assert await outcome_of(alice, waiting) == {"waiting": True}
    call, line = await app_rows()
    assert (call.kind, call.state, call.arguments) == ("tool_call", "app", {"months": 4})
    assert (line.kind, line.state) == ("status", "waiting")
    assert line.message == "From the app: Refresh the chart — waiting for your approval"
    approval = await ToolApproval.objects.aget(call_id=waiting["waiting"])
    assert approval.app_of == frame.split("/")[3] and approval.decision == ""
    client = Client()
    await sync_to_async(client.force_login)(alice)
    page = await sync_to_async(client.get)(f"/c/{alice_conversation.pk}/")
    inbox = await sync_to_async(client.get)("/inbox/")
    for shown in (page, inbox):
        assert "Approve “Refresh the chart”?" in shown.content.decode()
    card = await sync_to_async(client.get)(frame + "card/")
    assert "Approve “Refresh the chart”?" in card.content.decode()
    assert (await sync_to_async(verify)())[0] == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_approving_an_apps_call_runs_it_sealed_with_its_receipt_and_the_app_gets_it(
    charts, settings, alice, alice_conversation
):
    _, waiting = await asked_first(settings, alice, alice_conversation)
    approval = await ToolApproval.objects.aget(call_id=waiting["waiting"])
    body = {
        "decision": "approve",
        "fingerprint": approval.fingerprint,
        "edited_arguments": {"months": 6},
    }

    assert await decided(alice, alice_conversation, waiting["waiting"], body) == 200

    assert (await outcome_of(alice, waiting))["result"]["content"] == [
        {"type": "text", "text": "Refreshed 6 months"}
    ]
    call, line, decided_row, result, done = await app_rows()
    decision = decided_row.to_event()
    assert isinstance(decision, Decision)
    assert (decision.decision, decision.by) == ("approve", "alice")
    # The receipt binds what ran: the arguments as the owner changed them on the card.
    assert approval.fingerprint == fingerprint_or_blank({"months": 4})
    assert decision.fingerprint == fingerprint_or_blank({"months": 6})
    assert decision.edited_arguments == {"months": 6}
    assert call.seq < line.seq < decided_row.seq < result.seq < done.seq and result.ok is True
    answer = await Message.objects.aget(role="assistant")
    assert answer.state == "complete"
    assert (await sync_to_async(verify)())[0] == 0
    again = await decided(alice, alice_conversation, waiting["waiting"], {"decision": "deny"})
    assert again == 409


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_apps_call_denied_on_the_pages_form_never_runs_and_the_app_is_told_why(
    charts, settings, alice, alice_conversation
):
    _, waiting = await asked_first(settings, alice, alice_conversation)
    client = Client()
    await sync_to_async(client.force_login)(alice)

    # The card's form, as a page without JavaScript sends it.
    form = {"deny": waiting["waiting"], "reason": "not now"}
    sent = await sync_to_async(client.post)(f"/c/{alice_conversation.pk}/act/", form)
    await asyncio.gather(*app_calls.running())

    assert sent.status_code == 302

    told = await outcome_of(alice, waiting)
    assert told["error"]["message"] == "The user denied this call: not now"
    rows = await app_rows()
    assert [row.kind for row in rows] == [
        "tool_call",
        "status",
        "decision",
        "tool_result",
    ]
    assert rows[3].ok is False and "Refreshed" not in str([r.to_event() for r in rows])
    assert (await sync_to_async(verify)())[0] == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_apps_call_nobody_approves_in_time_is_denied_as_timed_out(
    charts, settings, alice, alice_conversation
):
    _, waiting = await asked_first(settings, alice, alice_conversation)
    await ToolApproval.objects.filter(call_id=waiting["waiting"]).aupdate(
        deadline=timezone.now() - timedelta(seconds=1)
    )

    assert await resuming.settle_expired() == 1
    await asyncio.gather(*app_calls.running())

    told = await outcome_of(alice, waiting)
    assert told["error"]["message"] == "Nobody approved this call in time; it did not run"
    decision = (await ActivityEvent.objects.aget(kind="decision")).to_event()
    assert isinstance(decision, Decision) and decision.decision == "timeout"
    assert not await ActivityEvent.objects.filter(
        kind="tool_result", ok=True, call_id=waiting["waiting"]
    ).aexists()
    assert (await sync_to_async(verify)())[0] == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_another_user_can_neither_approve_an_apps_call_nor_read_its_outcome(
    charts, settings, alice, bob, alice_conversation
):
    _, waiting = await asked_first(settings, alice, alice_conversation)

    status = await decided(bob, alice_conversation, waiting["waiting"], {"decision": "approve"})

    assert status == 404
    assert await outcome_of(bob, waiting) == {"status": 404}
    assert await outcome_of(alice, waiting) == {"waiting": True}
    approval = await ToolApproval.objects.aget(call_id=waiting["waiting"])
    assert approval.decision == ""


SHOWN = AppView(
    call_id="c1",
    uri=CHART_URI,
    sha256="ab" * 32,
    html="<script>secret()</script>",
    csp={"connectDomains": ("https://api.example.com",)},
    tool="charts__show_chart",
    server="charts",
    seq=4,
)


def test_the_apps_event_reaches_ag_ui_and_the_ui_message_stream_without_its_html():
    wire = to_json(SHOWN)
    assert wire == {
        "call_id": "c1",
        "uri": CHART_URI,
        "sha256": "ab" * 32,
        "csp": {"connectDomains": ["https://api.example.com"]},
        "tool": "charts__show_chart",
        "server": "charts",
        "seq": 4,
        "type": "app",
    }
    (agui,) = AguiWire(thread_id="conv", run_id="2").frames(from_json(wire))
    custom = json.loads(agui.payload.model_dump_json(by_alias=True))
    assert (custom["type"], custom["name"], custom["value"]) == ("CUSTOM", "app", wire)
    ui_stream = UiStreamWire(message_id="2")
    ui_stream.frames(from_json({"type": "turn", "question_id": "1", "message_id": "2"}))
    (part,) = ui_stream.frames(from_json(wire))
    assert part.payload["type"] == "data-app" and part.payload["data"] == wire
    assert "secret" not in json.dumps([custom, part.payload])


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_export_keeps_the_app_with_its_call_and_the_apps_own_call(
    charts, alice, alice_conversation
):
    frame = await a_shown_chart(alice, alice_conversation)
    await called(alice, frame, "refresh_chart", {"months": 2})
    client = AsyncClient()
    await client.aforce_login(alice)

    response = await client.get("/api/feeds/export/?format=ndjson")

    body = b"".join(await streamed(response)).decode()
    (feed,) = [json.loads(line) for line in body.splitlines()]
    kinds = [(e["type"], e.get("origin", "")) for e in feed["events"]]
    assert kinds.index(("tool_result", "")) < kinds.index(("app", ""))
    assert kinds.index(("app", "")) < kinds.index(("tool_call", "app"))
    (app,) = [e for e in feed["events"] if e["type"] == "app"]
    assert app["sha256"] == hashlib.sha256(CHART_HTML.encode()).hexdigest()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_auditor_sees_the_app_next_to_its_call_in_the_admin_as_text(
    charts, alice, alice_conversation, django_user_model
):
    await json_turn(alice_conversation, alice, 'charts__show_chart {"role": "engineer"}')
    row = await ActivityEvent.objects.aget(kind="app")

    def admin_page() -> str:
        admin = django_user_model.objects.create_superuser("root", "r@example.com", "pw")
        url = f"/admin/activity/activityfeed/{row.feed_id}/change/"
        return client_of(admin).get(url).content.decode()

    page = await sync_to_async(admin_page)()
    assert f"app {CHART_URI} (sha256 {row.result_summary})" in page
    assert "<script>\nlet next" not in page, "the app never runs in the admin"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_calls_trace_names_its_apps_address_and_hash_never_its_html(
    charts, alice, alice_conversation
):
    await json_turn(alice_conversation, alice, 'charts__show_chart {"role": "engineer"}')
    row = await ActivityEvent.objects.select_related("feed").aget(kind="app")

    def planned():
        feed = row.feed
        events = list(ActivityEvent.objects.filter(feed=feed))
        return trace_plan(feed, feed.model_calls.all(), events, Options(content=True))

    plan = await sync_to_async(planned)()
    (tool,) = [span for span in plan.spans if span.name == "execute_tool charts__show_chart"]
    (app,) = [event for event in tool.events if event.name == "glassbox.mcp.app"]
    assert app.attributes == {
        "mcp.app.resource_uri": CHART_URI,
        "mcp.app.sha256": row.result_summary,
    }
    assert "postMessage" not in repr(plan), "not even with content capture on"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_model_is_not_told_an_apps_calls_as_its_own(charts, alice, alice_conversation):
    frame = await a_shown_chart(alice, alice_conversation)
    await called(alice, frame, "refresh_chart", {"months": 2})
    answer = await Message.objects.filter(role="assistant").aget()
    later = await Message.objects.acreate(
        conversation_id=answer.conversation_id, role="assistant", content=""
    )

    history = await amodel_history(later)

    told = [c["function"]["name"] for m in history for c in m.get("tool_calls") or ()]
    assert told == ["charts__show_chart"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_auditor_sees_which_app_asked_on_the_approvals_admin_page(
    charts, settings, admin_user, alice, alice_conversation
):
    frame, waiting = await asked_first(settings, alice, alice_conversation)
    approval = await ToolApproval.objects.aget(call_id=waiting["waiting"])
    client = Client()
    await sync_to_async(client.force_login)(admin_user)

    page = await sync_to_async(client.get)(f"/admin/chat/toolapproval/{approval.pk}/change/")

    html = page.content.decode()
    assert "Asked by the app of call" in html and frame.split("/")[3] in html


async def noted(user, frame: str, body: object) -> tuple[int, dict]:
    client = AsyncClient()
    if user is not None:
        await client.aforce_login(user)
    response = await client.post(frame + "note/", body, content_type="application/json")
    is_json = response.get("Content-Type", "").startswith("application/json")
    return response.status_code, response.json() if is_json else {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_what_an_app_says_is_kept_sealed_in_its_feed_exported_and_on_the_wires(
    charts, alice, alice_conversation
):
    frame = await a_shown_chart(alice, alice_conversation)

    message = await noted(alice, frame, {"note": "message", "text": "Explain this chart"})
    context = await noted(alice, frame, {"note": "context", "text": 'Showing {"months": 3}'})

    assert message[0] == context[0] == 201
    client = AsyncClient()
    await client.aforce_login(alice)
    response = await client.get("/api/feeds/export/?format=ndjson")
    (feed,) = [json.loads(line) for line in b"".join(await streamed(response)).splitlines()]
    notes = [e for e in feed["events"] if e["type"] == "app_note"]
    app_call = frame.split("/")[3]
    assert [(n["note"], n["text"], n["call_id"]) for n in notes] == [
        ("message", "Explain this chart", app_call),
        ("context", 'Showing {"months": 3}', app_call),
    ]
    assert (await sync_to_async(verify)())[0] == 0
    wire = notes[0]
    (agui,) = AguiWire(thread_id="conv", run_id="2").frames(from_json(wire))
    custom = json.loads(agui.payload.model_dump_json(by_alias=True))
    assert (custom["type"], custom["name"], custom["value"]) == ("CUSTOM", "app_note", wire)
    ui_stream = UiStreamWire(message_id="2")
    ui_stream.frames(from_json({"type": "turn", "question_id": "1", "message_id": "2"}))
    (part,) = ui_stream.frames(from_json(wire))
    assert part.payload["type"] == "data-app-note" and part.payload["data"] == wire
    # Kept for the audit: the model's next turn is not told the app's context.
    answer = await Message.objects.filter(role="assistant").aget()
    later = await Message.objects.acreate(
        conversation_id=answer.conversation_id, role="assistant", content=""
    )
    assert "Showing" not in json.dumps(await amodel_history(later))


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_apps_note_that_is_malformed_too_long_or_not_its_owners_is_refused_and_not_kept(
    charts, alice, bob, alice_conversation
):
    frame = await a_shown_chart(alice, alice_conversation)

    unknown = await noted(alice, frame, {"note": "order", "text": "buy"})
    empty = await noted(alice, frame, {"note": "message", "text": " \x00 "})
    long = await noted(alice, frame, {"note": "context", "text": "x" * 4001})
    not_hers = await noted(bob, frame, {"note": "message", "text": "hi"})
    anonymous = await noted(None, frame, {"note": "message", "text": "hi"})

    assert unknown == (
        400,
        {"error": {"code": -32000, "message": "a note is a message or a context, with its text"}},
    )
    assert empty[1]["error"]["message"] == "the note has no text"
    assert long[1]["error"]["message"] == "the note is over 4000 characters"
    assert not_hers[0] == 404 and anonymous[0] in (302, 403, 404)
    assert not await ActivityEvent.objects.filter(kind="app_note").aexists()
