"""The MCP server built with @modelcontextprotocol/ext-apps (ext-apps/server.mjs, pinned in
ext-apps/package-lock.json), declared for Glassbox over stdio."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "ext-apps"
INSTALLED = FOLDER / "node_modules" / ".installed"


def ensure_installed() -> None:
    """`make ext-apps` once (under a lock: test processes share the folder); skipped without
    node and npm unless REQUIRE_NODE_CLIENTS=1 makes that a failure."""
    if INSTALLED.exists():
        return
    if shutil.which("npm") is None or shutil.which("node") is None:
        if os.environ.get("REQUIRE_NODE_CLIENTS") == "1":
            pytest.fail("REQUIRE_NODE_CLIENTS=1 but node or npm is missing")
        pytest.skip("needs node and npm for the ext-apps server (make ext-apps)")
    with open(FOLDER / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not INSTALLED.exists():
            subprocess.run(
                ["make", "ext-apps"], cwd=FOLDER.parent, check=True, capture_output=True
            )


def declared(name: str = "forecast") -> dict[str, Any]:
    ensure_installed()
    node = shutil.which("node") or "node"
    return {"name": name, "command": node, "args": [str(FOLDER / "server.mjs")]}
