"""A turn's trace as the GenAI semantic conventions name it, planned from its stored feed
(the one path for a turn that just ended and for history), and what it leaves out."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import httpx2
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from activity import telemetry
from activity.models import ActivityEvent, ActivityFeed, ModelCall
from activity.recording.events import ToolResult
from activity.telemetry.spans import Failure, Options, TracePlan, trace_plan
from chat.models import Conversation
from chat.turns.deps import Dependencies, configured_client
from tests.support.loopback_http import QuietHandler, serving
from tests.support.rows import answer_feed_id
from tests.support.turns import decided_turn, run_turn, stopped_turn

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "How do I negotiate my salary?"


def plan_of(feed_id: int, *, content: bool = False) -> TracePlan:
    feed = ActivityFeed.objects.get(pk=feed_id)
    calls, events = feed.model_calls.all(), feed.events.all()
    return trace_plan(feed, calls, events, Options(content=content))


def everything_said(plan: TracePlan) -> str:
    """Every attribute value of every span and span event, as one text."""
    values = []
    for span in plan.spans:
        values += [str(v) for v in span.attributes.values()]
        values += [str(v) for event in span.events for v in event.attributes.values()]
    return "\n".join(values)


def test_a_turn_is_an_invoke_agent_span_over_its_model_calls_and_its_tool_call(
    alice, knowledge_base
):
    answer = run_turn(Conversation.objects.create(owner=alice), QUESTION)
    plan = plan_of(answer_feed_id(answer))

    turn, *rest = plan.spans
    assert turn.name == "invoke_agent glassbox" and turn.parent_id is None
    assert [span.name for span in rest] == [
        "chat glassbox-demo", "chat glassbox-demo", "execute_tool search_documents",
    ]  # fmt: skip
    assert {span.parent_id for span in rest} == {turn.span_id}
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.provider.name"] == "glassbox.demo"
    assert turn.attributes["gen_ai.request.model"] == "glassbox-demo"
    assert turn.attributes["gen_ai.conversation.id"] == str(answer.conversation_id)
    chat = rest[0]
    assert chat.kind == "client" and chat.attributes["gen_ai.operation.name"] == "chat"
    used = [chat.attributes[f"gen_ai.usage.{way}_tokens"] for way in ("input", "output")]
    assert all(isinstance(tokens, int) and tokens > 0 for tokens in used)
    feed = ActivityFeed.objects.get(pk=answer_feed_id(answer))
    assert turn.attributes["gen_ai.usage.input_tokens"] == feed.prompt_tokens
    tool = rest[2]
    call = ActivityEvent.objects.get(feed=feed, kind="tool_call")
    assert tool.attributes["gen_ai.tool.name"] == "search_documents"
    assert tool.attributes["gen_ai.tool.call.id"] == call.call_id
    assert tool.error is None and turn.error is None
    # Recorded times: every span inside its turn, each tool span from its call to its result.
    assert all(turn.start_ns <= s.start_ns <= s.end_ns <= turn.end_ns for s in rest)
    result = ActivityEvent.objects.get(feed=feed, kind="tool_result")
    assert (
        tool.end_ns - tool.start_ns
        == (result.created_at - call.created_at) // timedelta(microseconds=1) * 1000
    )
    assert [e.attributes["glassbox.status.state"] for e in tool.events] == ["in_progress"] * 2 + [
        "done"
    ]


def test_by_default_no_question_argument_result_or_line_text_leaves(alice, knowledge_base):
    answer = run_turn(Conversation.objects.create(owner=alice), QUESTION)
    said = everything_said(plan_of(answer_feed_id(answer)))

    assert "negotiate" not in said.lower() and "salary" not in said.lower()
    assert "Found 3 documents" not in said


def test_with_content_capture_the_calls_arguments_results_and_lines_go_too(alice, knowledge_base):
    answer = run_turn(Conversation.objects.create(owner=alice), QUESTION)
    plan = plan_of(answer_feed_id(answer), content=True)
    tool = plan.spans[-1]

    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"]))["query"]
    assert tool.attributes["gen_ai.tool.call.result"]
    assert "Found 3 documents" in [
        e.attributes.get("glassbox.status.message") for e in tool.events
    ]
    assert QUESTION not in everything_said(plan)  # the question itself is never in a span


def test_a_failed_tool_is_an_error_span_and_the_turn_still_ends_well(alice, knowledge_base):
    question = "Simulate a failure while looking up salaries"
    answer = run_turn(Conversation.objects.create(owner=alice), question)
    plan = plan_of(answer_feed_id(answer))
    tool = next(span for span in plan.spans if span.name.startswith("execute_tool"))

    assert tool.error == Failure("tool_error")  # what the tool said is content
    assert tool.attributes["error.type"] == "tool_error"
    assert plan.root.error is None
    captured = plan_of(answer_feed_id(answer), content=True).spans[plan.spans.index(tool)]
    assert captured.error is not None and "missing argument" in captured.error.description


def test_an_approval_is_an_event_of_its_tool_span(alice):
    question = "Email advisor@example.com: can we meet on Tuesday?"
    answer = decided_turn(
        Conversation.objects.create(owner=alice), question, user=alice, approve=False
    )
    plan = plan_of(answer_feed_id(answer))
    tool = next(span for span in plan.spans if span.name == "execute_tool send_email")

    (approval,) = [e for e in tool.events if e.name == "glassbox.approval"]
    assert approval.attributes["glassbox.approval.decision"] == "deny"
    assert tool.error == Failure("approval_deny")  # a denied call did not run
    assert tool.attributes["error.type"] == "approval_deny"
    assert "alice" not in everything_said(plan)  # who decided stays in the audit


def test_an_mcp_tool_span_says_the_method_and_server_and_its_last_progress():
    now = timezone.now()
    feed = ActivityFeed(pk=7, started_at=now, finished_at=now + timedelta(seconds=4))
    feed.state = ActivityFeed.State.COMPLETE
    call = ActivityEvent(seq=1, kind="tool_call", tool="surveys__compare", call_id="c1")
    call.created_at, call.arguments = now + timedelta(seconds=1), {}
    result = ActivityEvent(
        seq=2, kind="tool_result", tool="surveys__compare", call_id="c1", ok=True,
        server="surveys", progress=5.0, progress_total=5.0, progress_count=5,
        progress_message="Read survey 5 of 5",
    )  # fmt: skip
    result.created_at = now + timedelta(seconds=3)
    plan = trace_plan(feed, [], [call, result], Options())
    tool = plan.spans[1]

    assert tool.attributes["mcp.method.name"] == "tools/call"
    assert tool.attributes["glassbox.mcp.server"] == "surveys"
    assert tool.end_ns - tool.start_ns == 2_000_000_000
    (progress,) = tool.events
    assert progress.attributes == {
        "glassbox.progress.count": 5,
        "glassbox.progress.progress": 5.0,
        "glassbox.progress.total": 5.0,
    }  # its message is content


def test_an_mcp_tool_span_names_the_session_its_result_keeps_and_a_stdio_call_names_none():
    now = timezone.now()
    feed = ActivityFeed(pk=9, started_at=now, finished_at=now + timedelta(seconds=2))
    rows = []
    for seq, (call_id, session) in enumerate([("c1", "9f1c0a"), ("c2", "")], start=1):
        call = ActivityEvent(seq=seq * 2, kind="tool_call", tool="web__x", call_id=call_id)
        call.created_at, call.arguments = now, {}
        kept = ToolResult(call_id=call_id, ok=True, summary="", duration_ms=1, tool="web__x",
                          server="web", mcp_session_id=session, seq=seq * 2 + 1)  # fmt: skip
        result = ActivityEvent.from_event(feed, kept)
        result.created_at = now
        rows += [call, result]
    plan = trace_plan(feed, [], rows, Options())

    over_http, over_stdio = plan.spans[1:]
    assert over_http.attributes["mcp.session.id"] == "9f1c0a"
    read_back = rows[1].to_event()
    assert isinstance(read_back, ToolResult) and read_back.mcp_session_id == "9f1c0a"
    assert "mcp.session.id" not in over_stdio.attributes
    assert over_stdio.attributes["mcp.method.name"] == "tools/call"
    assert rows[3].arguments is None  # nothing stored where there is no session


def test_an_interrupted_turn_is_an_error_span_and_a_call_without_result_too():
    now = timezone.now()
    feed = ActivityFeed(pk=8, started_at=now, finished_at=now + timedelta(seconds=2))
    feed.state = ActivityFeed.State.INTERRUPTED
    call = ActivityEvent(seq=1, kind="tool_call", tool="slow", call_id="c1", arguments={})
    call.created_at = now + timedelta(seconds=1)
    calls = [ModelCall(round=0, model="m", duration_ms=500, created_at=now)]
    plan = trace_plan(feed, calls, [call], Options())

    assert plan.root.error == Failure("interrupted", "the turn ended interrupted")
    assert plan.root.attributes["error.type"] == "interrupted"
    assert plan.spans[2].error == Failure("no_result", "the call has no result")
    assert plan.spans[2].end_ns == plan.root.end_ns
    assert plan.spans[1].start_ns == plan.root.start_ns  # never before its turn


def test_a_turn_its_owner_stopped_is_no_error_span_nor_is_the_call_it_cut_short():
    now = timezone.now()
    feed = ActivityFeed(pk=7, started_at=now, finished_at=now + timedelta(seconds=2))
    feed.state = ActivityFeed.State.STOPPED
    call = ActivityEvent(seq=1, kind="tool_call", tool="slow", call_id="c1", arguments={})
    call.created_at = now + timedelta(seconds=1)
    plan = trace_plan(feed, [], [call], Options())

    assert plan.root.error is None
    assert plan.root.attributes["glassbox.turn.state"] == "stopped"
    assert plan.spans[1].error is None and plan.spans[1].end_ns == plan.root.end_ns


def test_a_stopped_turns_trace_says_so_without_an_error(alice, knowledge_base, gate):
    held = gate(after=20, request=2)
    answer = stopped_turn(Conversation.objects.create(owner=alice), QUESTION, held)
    plan = plan_of(answer_feed_id(answer))

    assert [span.error for span in plan.spans] == [None] * len(plan.spans)
    assert plan.root.attributes["glassbox.turn.state"] == "stopped"
    last = plan.root.events[-1].attributes
    assert (last["glassbox.status.icon"], last["glassbox.status.state"]) == ("⏹", "done")


def test_a_feeds_trace_id_is_its_own_and_the_admin_shows_it(admin_client, alice, knowledge_base):
    first = run_turn(Conversation.objects.create(owner=alice), QUESTION)
    second = run_turn(Conversation.objects.create(owner=alice), QUESTION)
    feeds = ActivityFeed.objects.in_bulk([first.feed_id, second.feed_id])
    ids = {telemetry.trace_id_hex(f.pk, f.started_at) for f in feeds.values()}

    assert len(ids) == 2 and all(len(i) == 32 for i in ids)
    assert f"{plan_of(answer_feed_id(first)).trace_id:032x}" in ids
    page = admin_client.get(f"/admin/activity/activityfeed/{first.feed_id}/change/")
    feed = feeds[first.feed_id]
    assert telemetry.trace_id_hex(feed.pk, feed.started_at) in page.content.decode()


def test_with_no_endpoint_the_sdk_is_never_imported():
    """A whole app loaded, and a turn's end told, in a process of its own."""
    script = (
        "import os, sys, django; os.environ.pop('OTEL_EXPORTER_OTLP_ENDPOINT', None);"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'project.settings'; django.setup();"
        "import chat.turns.runner, activity.admin;"
        "from activity import telemetry; telemetry.turn_ended(1);"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')"
        " or m.startswith('opentelemetry.exporter') or m == 'activity.telemetry.export'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_export_otel_refuses_a_backward_period_and_a_missing_endpoint(settings):
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:9"
    with pytest.raises(CommandError, match="--until must come after --since"):
        call_command("export_otel", "--since", "2026-11-02", "--until", "2026-11-01")
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = ""
    with pytest.raises(CommandError, match="Set OTEL_EXPORTER_OTLP_ENDPOINT"):
        call_command("export_otel", "--since", "2026-11-01", "--until", "2026-11-02")
    with pytest.raises(CommandError, match="is not a date"):
        call_command("export_otel", "--since", "yesterday", "--until", "2026-11-02")


class NotATraceBackend(QuietHandler):
    """A web server that takes no OTLP (POST is not implemented: 501)."""


def test_export_otel_names_an_endpoint_that_does_not_take_the_traces(
    settings, alice, knowledge_base
):
    run_turn(Conversation.objects.create(owner=alice), QUESTION)
    today = timezone.now().date()
    until = str(today + timedelta(days=1))
    with (
        serving(NotATraceBackend) as settings.OTEL_EXPORTER_OTLP_ENDPOINT,
        pytest.raises(CommandError, match="did not take the traces"),
    ):
        call_command("export_otel", "--since", str(today), "--until", until)


def test_a_trace_backend_that_does_not_take_the_trace_costs_the_trace_never_the_turn(
    settings, alice, knowledge_base
):
    with serving(NotATraceBackend) as settings.OTEL_EXPORTER_OTLP_ENDPOINT:
        answer = run_turn(Conversation.objects.create(owner=alice), QUESTION)
        from activity.telemetry import export

        assert export.flush(10_000)  # the batch was tried, and dropped

    assert answer.state == "complete" and "salary" in answer.content.lower()


@pytest.mark.parametrize("content", [False, True])
def test_a_turn_read_at_its_end_and_read_from_history_is_the_same_trace(
    settings, alice, knowledge_base, content
):
    from activity.telemetry import export

    settings.OTEL_CAPTURE_MESSAGE_CONTENT = content
    conversation = Conversation.objects.create(owner=alice)
    answers = [run_turn(conversation, QUESTION), run_turn(conversation, "Tell me a joke")]
    feeds = ActivityFeed.objects.filter(pk__in=[a.feed_id for a in answers])

    from_history = list(export.plans(feeds))
    at_the_end = [export.feed_plan(answer_feed_id(answer)) for answer in answers]
    assert from_history == at_the_end
    assert [len(plan.spans) for plan in from_history] == [4, 2]


@pytest.mark.parametrize("content", [False, True])
def test_a_reasoning_step_is_an_event_of_its_model_span_with_its_text_only_if_captured(
    alice, knowledge_base, content
):
    question = "Think it over: how do I negotiate my salary?"
    answer = run_turn(Conversation.objects.create(owner=alice), question)
    plan = plan_of(answer_feed_id(answer), content=content)
    call = ModelCall.objects.filter(feed_id=answer.feed_id).order_by("round").first()
    assert call is not None

    assert call.reasoning and call.thinking_ms is not None
    first = plan.spans[1]
    (step,) = [event for event in first.events if event.name == "glassbox.reasoning"]
    assert step.attributes["glassbox.reasoning.duration_ms"] == call.thinking_ms
    assert step.attributes.get("glassbox.reasoning.content") == (
        call.reasoning if content else None
    )
    assert (call.reasoning in everything_said(plan)) is content


class Refusing(httpx2.AsyncBaseTransport):
    """A provider that answers every request with a 503 and words of its own."""

    async def handle_async_request(self, request):
        return httpx2.Response(503, json={"error": {"message": "WOMBAT-PROVIDER-75 is down"}})


def test_a_failed_model_request_is_a_model_span_with_its_error_type_and_not_its_words(
    settings, alice
):
    settings.OPENAI_API_KEY, settings.GLASSBOX_PROVIDER_RETRIES = "sk-test", 0
    settings.GLASSBOX_MODEL = "gpt-4o-mini"
    client = Dependencies(client_factory=lambda: configured_client(Refusing()))
    answer = run_turn(Conversation.objects.create(owner=alice), QUESTION, client)
    plan = plan_of(answer_feed_id(answer))

    assert answer.state == "failed"
    turn, model = plan.spans
    assert model.name == "chat gpt-4o-mini" and model.parent_id == turn.span_id
    assert model.attributes["gen_ai.provider.name"] == "openai"
    assert model.attributes["error.type"] == "InternalServerError"
    assert model.error == Failure("InternalServerError")
    assert turn.attributes["error.type"] == "failed"
    assert "WOMBAT" not in everything_said(plan)
