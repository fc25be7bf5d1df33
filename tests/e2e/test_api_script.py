"""docs/api.md's promise: a script runs a turn over SSE and prints status lines as they come."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.support.servers import ROOT, demo_token

pytestmark = pytest.mark.e2e


def test_a_script_prints_the_agents_work_as_it_happens(glassbox_server):
    url, env = glassbox_server
    token = demo_token(env)
    script = subprocess.Popen(
        [sys.executable, str(ROOT / "docs" / "ask.py"), url, "How do I negotiate my salary?"],
        env={**env, "GLASSBOX_TOKEN": token},
        stdout=subprocess.PIPE,
        text=True,
    )
    arrivals = []
    assert script.stdout is not None
    for line in script.stdout:
        arrivals.append((time.monotonic(), line.rstrip("\n")))
    assert script.wait(timeout=30) == 0
    lines = [text for _, text in arrivals]
    assert lines[0].startswith("🔍")
    assert lines[2:5] == ["📄 Found 3 documents", "✍️ Writing the answer…", "✅ Done"]
    assert "Salary negotiation: preparing your number" in "\n".join(lines)
    # The search line was printed well before the script finished: it streamed.
    assert arrivals[-1][0] - arrivals[0][0] > 0.3
