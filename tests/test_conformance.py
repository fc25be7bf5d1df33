"""The MCP conformance suite's client scenarios outside authorization against Glassbox's MCP
client (conformance/client.py), when the suite is installed (`make conformance` installs it, with
the Node 22 it needs); skipped otherwise, unless REQUIRE_CONFORMANCE=1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "conformance" / "node_modules" / ".bin"


@pytest.fixture
def suite():
    if not (BIN / "conformance").exists() or not (BIN / "node").exists():
        if os.environ.get("REQUIRE_CONFORMANCE") == "1":
            pytest.fail("the conformance suite is not installed (make conformance)")
        pytest.skip("the conformance suite is not installed (make conformance)")
    return BIN / "conformance"


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
    client = f"{sys.executable} {ROOT / 'conformance' / 'client.py'}"
    run = subprocess.run(
        [
            suite,
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
            str(tmp_path),
        ],
        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (checks,) = tmp_path.glob("*/checks.json")
    results = {
        c["id"]: c["status"] for c in json.loads(checks.read_text()) if c["status"] != "INFO"
    }
    assert results == dict.fromkeys(SCENARIOS[scenario], "SUCCESS")
