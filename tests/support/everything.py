"""The MCP reference servers' test server (npm `@modelcontextprotocol/server-everything`,
pinned in conformance/everything/package.json, with the Node 22 it runs on), over stdio.
Without `make conformance/everything/node_modules/.installed` its tests are skipped, saying
so, except on CI, where that is a failure."""

from __future__ import annotations

import os

import pytest

from chat.agent.mcp.config import ServerSpec, spec_from_mapping
from tests.support.mcp import ROOT

FOLDER = ROOT / "conformance" / "everything" / "node_modules"
NODE = FOLDER / ".bin" / "node"
SERVER = FOLDER / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def everything(*, sampling: bool) -> ServerSpec:
    if not NODE.exists() or not SERVER.exists():
        reason = (
            "server-everything is not installed "
            "(make conformance/everything/node_modules/.installed)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return spec_from_mapping(
        {
            "name": "everything",
            "command": str(NODE),
            "args": [str(SERVER), "stdio"],
            "sampling": sampling,
        }
    )
