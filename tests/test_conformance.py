"""The MCP conformance suite's client scenarios outside authorization against Glassbox's MCP
client (conformance/client.py): those of 0.1.16 (`make conformance` installs it, with the
Node 22 it needs) and the 2026-07-28 result scenario of 0.2.0-alpha.12 (the suite pinned in
conformance/auth); each skipped while its suite is not installed, unless
REQUIRE_CONFORMANCE=1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "conformance" / "node_modules" / ".bin"
BIN_2026 = ROOT / "conformance" / "auth" / "node_modules" / ".bin"
# Glassbox's MCP client alone: no database, no channel layer.
pytestmark = pytest.mark.own_site


def installed(folder: Path, how: str) -> Path:
    if not (folder / "conformance").exists() or not (folder / "node").exists():
        if os.environ.get("REQUIRE_CONFORMANCE") == "1":
            pytest.fail(f"the conformance suite is not installed ({how})")
        pytest.skip(f"the conformance suite is not installed ({how})")
    return folder


@pytest.fixture
def suite():
    return installed(BIN, "make conformance")


@pytest.fixture
def suite_2026():
    return installed(BIN_2026, "make conformance-auth")


def run_scenario(folder: Path, scenario: str, output: Path) -> subprocess.CompletedProcess:
    """The scenario against conformance/client.py; the suite's checks land in `output`."""
    client = f"{sys.executable} {ROOT / 'conformance' / 'client.py'}"
    return subprocess.run(
        [
            folder / "conformance",
            "client",
            "--command",
            client,
            "--scenario",
            scenario,
            # The suite's 30 s default for the client to finish, which a busy machine's
            # Python start-up has overrun with every check passed: the run still ends when
            # the client exits.
            "--timeout",
            "100000",
            "-o",
            str(output),
        ],
        env={**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def verdicts(output: Path) -> dict[str, str]:
    (checks,) = output.glob("*/checks.json")
    return {c["id"]: c["status"] for c in json.loads(checks.read_text()) if c["status"] != "INFO"}


# The client scenarios outside authorization (those are conformance/auth's), each with every
# check it makes: all must pass (a warning, such as sse-retry's reconnection later than the
# server's `retry`, is not a pass).
SCENARIOS = {
    "initialize": {"mcp-client-initialization"},
    "tools_call": {"tool-add-numbers"},
    "elicitation-sep1034-client-defaults": {
        f"client-elicitation-sep1034-{kind}-default"
        for kind in ("string", "integer", "number", "enum", "boolean")
    },
    "sse-retry": {
        "client-sse-graceful-reconnect",
        "client-sse-retry-timing",
        "client-sse-last-event-id",
    },
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_check_of_the_conformance_suites_client_scenarios_passes(scenario, suite, tmp_path):
    run = run_scenario(suite, scenario, tmp_path)

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert verdicts(tmp_path) == dict.fromkeys(SCENARIOS[scenario], "SUCCESS")


def test_a_2026_result_without_result_type_is_read_as_complete(suite_2026, tmp_path):
    """SEP-2322's scenario: input-required results and their retries, and a tool whose result
    has no `resultType`. The suite's checks see only what reaches its server; that the call
    was read is the client's own word: it exits with an error when a call fails, and the
    suite then fails the run."""
    run = run_scenario(suite_2026, "sep-2322-client-request-state", tmp_path)

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert verdicts(tmp_path) == dict.fromkeys(
        {
            "sep-2322-client-request-state-echoed",
            "sep-2322-client-jsonrpc-id-different",
            "sep-2322-client-no-state-omitted",
            "sep-2322-client-parallel-isolation",
            "sep-2322-default-result-type-complete",
        },
        "SUCCESS",
    )
