"""The protocols' own clients under Node (clients/: @ag-ui/client and the `ai` package, pinned):
a turn's raw streams in, what the client rebuilt out."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
NODE = CLIENTS / "node_modules" / ".bin" / "node"
INSTALLED = CLIENTS / "node_modules" / ".installed"


def ensure_installed() -> None:
    """`make clients` once (under a lock: test processes share the folder); skipped without
    npm unless REQUIRE_NODE_CLIENTS=1 makes that a failure."""
    if INSTALLED.exists() and NODE.exists():
        return
    if shutil.which("npm") is None:
        if os.environ.get("REQUIRE_NODE_CLIENTS") == "1":
            pytest.fail("REQUIRE_NODE_CLIENTS=1 but npm is missing")
        pytest.skip("needs npm for the stream clients (make clients)")
    with open(CLIENTS / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not INSTALLED.exists():
            subprocess.run(
                ["make", "clients"], cwd=CLIENTS.parent, check=True, capture_output=True
            )


def read_with_client(wire: str, connections: list[str]) -> dict[str, Any]:
    """What the standard's client rebuilds from these connections' raw event streams."""
    done = subprocess.run(
        [str(NODE), str(CLIENTS / "read_turn.mjs")],
        input=json.dumps({"wire": wire, "connections": connections}),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
