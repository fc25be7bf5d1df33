"""Arize Phoenix, a trace backend people run, as the receiver of the tests' traces: started
from its own virtualenv (`make phoenix`, as the fuzzer has one), read back through its REST
API. Absent, its tests skip, unless REQUIRE_PHOENIX=1 makes that a failure."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ports import free_port
from tests.support.processes import wait_until_healthy
from tests.support.servers import ROOT

PHOENIX = Path(os.environ.get("GLASSBOX_PHOENIX") or ROOT / ".venv-phoenix" / "bin" / "phoenix")
# A Phoenix already serving (CI starts one beside the lint, so its slow start costs no test).
RUNNING = os.environ.get("GLASSBOX_PHOENIX_URL", "")
# Its start (imports, then its database's migrations) takes about a minute on an idle
# machine, two and a half on a busy one.
START_SECONDS = 300


def phoenix_or_skip() -> Path:
    if PHOENIX.exists() or RUNNING:
        return PHOENIX
    if os.environ.get("REQUIRE_PHOENIX") == "1":
        pytest.fail(f"REQUIRE_PHOENIX=1 but {PHOENIX} is missing (make phoenix installs it)")
    pytest.skip(f"Phoenix is not installed ({PHOENIX}; make phoenix installs it)")


@contextlib.contextmanager
def phoenix_server(work: Path) -> Iterator[str]:
    """A Phoenix of its own on loopback ports, its database in `work`; yields its URL, the
    OTLP/HTTP endpoint to set and the base of its API."""
    binary = phoenix_or_skip()
    if RUNNING:
        _wait_up(RUNNING, None, None)
        yield RUNNING
        return
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")} | {
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    url = f"http://127.0.0.1:{port}"
    with open(work / "phoenix.log", "wb") as log:
        process = subprocess.Popen(
            [str(binary), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_up(url, process, work / "phoenix.log")
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_up(url: str, process: subprocess.Popen | None, log: Path | None) -> None:
    wait_until_healthy("Phoenix", f"{url}/healthz", START_SECONDS, process, log)


def trace_spans(url: str, trace_id: str) -> list[dict]:
    """The spans Phoenix holds of one trace (its default project)."""
    address = f"{url}/v1/projects/default/spans?trace_id={trace_id}&limit=1000"
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            return json.load(response)["data"]
    except urllib.error.HTTPError as error:
        if error.code == 404:  # no project yet: nothing was received at all
            return []
        raise


def spans_received(url: str, trace_id: str, count: int, seconds: float = 60) -> list[dict]:
    """The trace's spans once Phoenix has stored `count` of them (it ingests in the
    background); fails with what it has after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        spans = trace_spans(url, trace_id)
        if len(spans) >= count or time.monotonic() > deadline:
            assert len(spans) == count, [span["name"] for span in spans]
            return spans
        time.sleep(0.2)


def span_annotations(url: str, span: str) -> list[dict]:
    """The annotations Phoenix holds of one span (its default project)."""
    address = f"{url}/v1/projects/default/span_annotations?span_ids={span}&limit=100"
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            return json.load(response)["data"]
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return []
        raise


def annotations_received(url: str, span: str, count: int, seconds: float = 60) -> list[dict]:
    """The span's annotations once Phoenix holds `count` of them (they are sent from a
    thread of their own); fails with what it has after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        found = span_annotations(url, span)
        if len(found) >= count or time.monotonic() > deadline:
            assert len(found) == count, found
            return found
        time.sleep(0.2)
