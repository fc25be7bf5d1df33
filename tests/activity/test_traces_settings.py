"""OpenTelemetry's standard variables decide where and how traces go: the traces endpoint as
it is, the SDK switched off, OTLP over HTTP or gRPC, and the headers a backend asks for (read
by the SDK's own exporter), each against a receiver."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from activity import telemetry
from chat.models import Conversation
from project.otel import traces_endpoint, traces_protocol
from tests.support.otlp import otlp_grpc_receiver, otlp_receiver
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "How do I negotiate my salary?"
NOWHERE = "http://127.0.0.1:9"


def flushed() -> bool:
    from activity.telemetry import export

    return export.flush(10_000)


def names(spans: list[dict]) -> set[str]:
    return {span["name"] for span in spans}


def test_the_traces_endpoint_is_used_as_it_is_over_the_general_one(
    settings, alice, knowledge_base
):
    with otlp_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = NOWHERE
        settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = backend.url + "/otlp/traces"
        run_turn(Conversation.objects.create(owner=alice), QUESTION)
        assert flushed()

    assert "execute_tool search_documents" in names(backend.spans)
    assert {headers[":path"] for headers in backend.headers} == {"/otlp/traces"}


def test_the_headers_a_backend_asks_for_go_with_every_export(
    settings, monkeypatch, alice, knowledge_base
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=glass,authorization=Basic%20Zm9v")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "authorization=Bearer%20t0ken")
    with otlp_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        run_turn(Conversation.objects.create(owner=alice), QUESTION)
        assert flushed()

    assert backend.headers, "the trace was sent"
    # The traces' own variable wins over the general one, as the specification says.
    assert {h.get("authorization") for h in backend.headers} == {"Bearer t0ken"}
    assert {h.get("x-team") for h in backend.headers} == {None}


def test_over_grpc_the_trace_and_its_headers_reach_a_grpc_receiver(
    settings, monkeypatch, alice, knowledge_base
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "authorization=Bearer%20t0ken")
    settings.OTEL_TRACES_PROTOCOL = "grpc"
    with otlp_grpc_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        answer = run_turn(Conversation.objects.create(owner=alice), QUESTION)
        assert flushed()
        feed = answer.answer_feed

    trace = backend.of_trace(telemetry.trace_id_hex(feed.pk, feed.started_at))
    assert names(trace) == {
        "invoke_agent glassbox", "chat glassbox-demo", "execute_tool search_documents",
    }  # fmt: skip
    assert {h.get("authorization") for h in backend.headers} == {"Bearer t0ken"}


def test_export_otel_sends_a_period_over_grpc_too(settings, alice, knowledge_base):
    answer = run_turn(Conversation.objects.create(owner=alice), QUESTION)
    settings.OTEL_TRACES_PROTOCOL = "grpc"
    feed = answer.answer_feed
    assert feed.finished_at is not None
    with otlp_grpc_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        call_command(
            "export_otel", "--since", feed.started_at.isoformat(),
            "--until", feed.finished_at.isoformat(),
        )  # fmt: skip

    assert len(backend.of_trace(telemetry.trace_id_hex(feed.pk, feed.started_at))) == 4


def test_with_the_sdk_disabled_nothing_is_sent_and_export_otel_says_why(
    settings, alice, knowledge_base
):
    settings.OTEL_SDK_DISABLED = True
    with otlp_receiver() as backend:
        settings.OTEL_EXPORTER_OTLP_ENDPOINT = backend.url
        answer = run_turn(Conversation.objects.create(owner=alice), QUESTION)
        with pytest.raises(CommandError, match="OTEL_SDK_DISABLED unset"):
            call_command("export_otel", "--since", "2026-01-01", "--until", "2030-01-01")

    assert answer.state == "complete" and backend.spans == []
    assert not telemetry.enabled()


def test_a_disabled_sdk_from_the_environment_is_never_imported():
    """The whole app loaded from the environment, and a turn's end told, in a process of
    its own: an endpoint is set, but OTEL_SDK_DISABLED wins."""
    script = (
        "import os, sys, django; os.environ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] = "
        f"'{NOWHERE}/v1/traces'; os.environ['OTEL_SDK_DISABLED'] = 'true';"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'project.settings'; django.setup();"
        "from activity import telemetry; telemetry.turn_ended(1);"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')"
        " or m.startswith('opentelemetry.exporter') or m == 'activity.telemetry.export'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_the_protocol_is_the_traces_own_then_the_general_one_then_http_protobuf():
    assert traces_protocol("", "") == "http/protobuf"
    assert traces_protocol("", "grpc") == "grpc"
    assert traces_protocol("http/protobuf", "grpc") == "http/protobuf"
    with pytest.raises(ValueError, match="not 'http/json'"):
        traces_protocol("http/json", "")


def test_the_endpoint_gets_the_traces_path_only_over_http_and_only_when_general():
    given = {"traces": "", "base": "http://collector:4318/", "protocol": "http/protobuf"}
    assert traces_endpoint(**given) == "http://collector:4318/v1/traces"
    assert traces_endpoint(**given | {"protocol": "grpc"}) == "http://collector:4318/"
    assert traces_endpoint(**given | {"traces": "https://x/in"}) == "https://x/in"
    assert traces_endpoint(traces="", base="", protocol="grpc") == ""
