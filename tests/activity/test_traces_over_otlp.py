"""Traces as a receiver gets them over OTLP: an instrumented MCP server's spans join the turn's
trace under its tool span; with content capture off no text a person, the model or a tool
wrote reaches any attribute, event or status; a stopped turn is no error."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from activity import telemetry
from activity.models import ActivityFeed, ModelCall
from chat.agent.mcp.config import spec_from_mapping
from chat.models import Conversation, Message
from tests.support.mcp import http_server
from tests.support.otlp import Received, SpanDict, otlp_receiver
from tests.support.rows import answer_feed_id
from tests.support.sockets import json_turn
from tests.support.turns import decided_turn, run_turn, stopped_turn

pytestmark = pytest.mark.django_db(transaction=True)
TRACED = "tests.support.traced_mcp_server"


def trace_of(answer: Message) -> str:
    feed = ActivityFeed.objects.get(pk=answer_feed_id(answer))
    return telemetry.trace_id_hex(feed.pk, feed.started_at)


def everything_said(spans: list[SpanDict]) -> str:
    """Every attribute, event and status text of the spans received, as one text."""
    said = []
    for span in spans:
        said += [str(value) for value in span["attributes"].values()]
        for event in span["events"]:
            said += [event["name"], *(str(v) for v in event["attributes"].values())]
        said.append(span["status"]["message"])
    return "\n".join(said)


def flushed() -> bool:
    from activity.telemetry import export

    return export.flush(10_000)


async def traced_turn(conversation: Conversation, user, tool: str, **arguments) -> Message:
    events = await json_turn(conversation, user, f"traced__{tool} {json.dumps(arguments)}")
    return await Message.objects.aget(pk=events[-1]["message_id"])


@pytest.mark.asyncio
@pytest.mark.foreign_wire
async def test_an_instrumented_mcp_servers_spans_are_children_of_the_turns_tool_span(
    settings, mcp_sessions, alice, alice_conversation
):
    with otlp_receiver() as backend:
        endpoint = backend.url + "/v1/traces"
        with http_server(TRACED, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint) as url:
            settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
            settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "traced", "url": url})]
            answer = await traced_turn(alice_conversation, alice, "lookup", topic="tides")
            assert await sync_to_async(flushed)()
            trace = await sync_to_async(trace_of)(answer)

            def joined(spans: list[SpanDict]) -> bool:
                names = {span["name"] for span in spans if span["trace_id"] == trace}
                return {"execute_tool traced__lookup", "lookup in the index"} <= names

            assert await sync_to_async(backend.wait_for)(joined)

    spans = {span["name"]: span for span in backend.of_trace(trace)}
    tool, served = spans["execute_tool traced__lookup"], spans["tools/call lookup"]
    assert tool["service"] == "glassbox" and served["service"] == "traced-mcp"
    assert served["kind"] == "SPAN_KIND_SERVER"
    assert served["parent_id"] == tool["span_id"]
    assert spans["lookup in the index"]["parent_id"] == served["span_id"]
    assert tool["parent_id"] == spans["invoke_agent glassbox"]["span_id"]


@pytest.mark.asyncio
@pytest.mark.foreign_wire
async def test_an_mcp_calls_arguments_results_and_error_text_stay_out_by_default(
    settings, mcp_sessions, alice, alice_conversation
):
    # The server's own spans stay in the server: it would try a receiver on its default
    # port, seconds of retries for each span, and its spans are not Glassbox's to judge.
    with otlp_receiver() as backend, http_server(TRACED, OTEL_SDK_DISABLED="true") as url:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        settings.GLASSBOX_MCP_SERVERS = [spec_from_mapping({"name": "traced", "url": url})]
        looked = await traced_turn(alice_conversation, alice, "lookup", topic="ZEBRA-TOPIC-71")
        failed = await traced_turn(alice_conversation, alice, "fail", marker="QUOKKA-ERROR-72")
        assert await sync_to_async(flushed)()
    traces = [await sync_to_async(trace_of)(answer) for answer in (looked, failed)]
    spans = [span for trace in traces for span in backend.of_trace(trace)]

    said = everything_said(spans)
    assert "ZEBRA" not in said and "QUOKKA" not in said and "index is down" not in said
    (failing,) = [span for span in spans if span["name"] == "execute_tool traced__fail"]
    assert failing["status"] == {"code": "STATUS_CODE_ERROR", "message": ""}
    assert failing["attributes"]["error.type"] == "tool_error"
    assert failing["attributes"]["mcp.method.name"] == "tools/call"


@pytest.fixture
def failed_denied_and_stopped(alice, knowledge_base, gate) -> list[Message]:
    """A turn whose tool fails, one whose e-mail its owner denies with a reason, and one
    its owner stops mid-answer, each with words of its own."""
    failing = run_turn(
        Conversation.objects.create(owner=alice), "Simulate a failure while looking up walruses"
    )
    denied = decided_turn(
        Conversation.objects.create(owner=alice),
        "Email advisor@example.com: OCELOT-BODY-73 on Tuesday?",
        user=alice,
        approve=False,
        reason="MARMOT-REASON-74",
    )
    held = gate(after=20, request=2)
    stopped = stopped_turn(
        Conversation.objects.create(owner=alice), "How do I negotiate my salary?", held
    )
    assert (failing.state, denied.state, stopped.state) == ("complete", "complete", "stopped")
    return [failing, denied, stopped]


def exported(answers: list[Message], backend: Received) -> list[dict[str, SpanDict]]:
    """The answers' traces, sent by `manage.py export_otel` (the same spans a turn sends at
    its end) and received: each answer's spans by name."""
    from django.core.management import call_command

    feeds = ActivityFeed.objects.filter(pk__in=[a.feed_id for a in answers])
    since = min(feed.started_at for feed in feeds)
    until = max(feed.finished_at for feed in feeds if feed.finished_at)
    call_command("export_otel", "--since", since.isoformat(), "--until", until.isoformat())
    return [{span["name"]: span for span in backend.of_trace(trace_of(a))} for a in answers]


def test_with_capture_off_a_failed_tool_a_denial_and_a_stop_send_no_text(
    settings, failed_denied_and_stopped
):
    with otlp_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        failing, denied, stopped = exported(failed_denied_and_stopped, backend)

    said = everything_said([*failing.values(), *denied.values(), *stopped.values()])
    for written in ("walrus", "missing argument", "OCELOT", "MARMOT", "advisor@", "salary"):
        assert written not in said
    search, email = failing["execute_tool search_documents"], denied["execute_tool send_email"]
    assert search["status"] == {"code": "STATUS_CODE_ERROR", "message": ""}
    assert search["attributes"]["error.type"] == "tool_error"
    assert email["status"] == {"code": "STATUS_CODE_ERROR", "message": ""}
    assert email["attributes"]["error.type"] == "approval_deny"
    # A stop is its owner's choice: no span of the stopped turn is an error.
    assert {span["status"]["code"] for span in stopped.values()} == {"STATUS_CODE_OK"}
    assert all("error.type" not in span["attributes"] for span in stopped.values())
    assert stopped["invoke_agent glassbox"]["attributes"]["glassbox.turn.state"] == "stopped"


def test_with_capture_on_the_failures_say_what_went_wrong(settings, failed_denied_and_stopped):
    settings.OTEL_CAPTURE_MESSAGE_CONTENT = True
    with otlp_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        failing, denied, _stopped = exported(failed_denied_and_stopped, backend)

    assert "missing argument" in failing["execute_tool search_documents"]["status"]["message"]
    assert "MARMOT-REASON-74" in denied["execute_tool send_email"]["status"]["message"]


def test_export_otel_names_each_turns_own_provider_and_model_not_the_shells(
    settings, alice, knowledge_base
):
    on_demo = run_turn(Conversation.objects.create(owner=alice), "How do I negotiate my salary?")
    on_openai = run_turn(Conversation.objects.create(owner=alice), "Tell me a joke")
    # As a turn answered by a provider's model stores it.
    ActivityFeed.objects.filter(pk=answer_feed_id(on_openai)).update(model="gpt-4o-mini")
    ModelCall.objects.filter(feed_id=on_openai.feed_id).update(model="gpt-4o-mini")
    settings.OPENAI_API_KEY, settings.GLASSBOX_MODEL = "sk-the-exporting-shell", "gpt-5"
    with otlp_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        demo, openai = exported([on_demo, on_openai], backend)

    for spans, provider, model in ((demo, "glassbox.demo", "glassbox-demo"),
                                   (openai, "openai", "gpt-4o-mini")):  # fmt: skip
        turn = spans["invoke_agent glassbox"]["attributes"]
        assert (turn["gen_ai.provider.name"], turn["gen_ai.request.model"]) == (provider, model)
        chat = spans[f"chat {model}"]["attributes"]
        assert (chat["gen_ai.provider.name"], chat["gen_ai.request.model"]) == (provider, model)
