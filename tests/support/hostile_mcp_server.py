"""An MCP server for the tests whose tool schemas are hostile, built with the `mcp` SDK: it
serves one tool, `echo`, and lists it as HOSTILE_SCHEMA says (by environment):

- `catastrophic`: `text` must match `^(a+)+$` (exponential for a backtracking engine);
- `backreference`: `text` must match `^(a)\\1$` (RE2 cannot take it), beside a plain `ping`;
- `deep`: a schema HOSTILE_DEPTH levels deep (1,000: more than the SDK can carry), beside
  `ping`;
- `huge`: a schema of 10 MB, beside `ping`;
- `many`: 10,000 tools (`echo_0` … `echo_9999`).

Run over stdio: `python -m tests.support.hostile_mcp_server`."""

from __future__ import annotations

import os
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import MCPServer

CASE = os.environ.get("HOSTILE_SCHEMA", "catastrophic")
CATASTROPHIC = "^(a+)+$"
MANY = 10_000


class Hostile(MCPServer):
    async def list_tools(self) -> list[types.Tool]:
        tools = {tool.name: tool for tool in await super().list_tools()}
        echo, ping = tools["echo"], tools["ping"]
        if CASE == "many":
            return [echo.model_copy(update={"name": f"echo_{n}"}) for n in range(MANY)]
        echo.input_schema = SCHEMAS[CASE]()
        return [echo, ping]


def _text(**rules: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"text": {"type": "string", **rules}},
        "required": ["text"],
    }


def _deep() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _level in range(int(os.environ.get("HOSTILE_DEPTH", "1000"))):
        schema = {"type": "array", "items": schema}
    return {"type": "object", "properties": {"text": schema}}


def _huge() -> dict[str, Any]:
    return _text(description="x" * (10 * 1024 * 1024))


SCHEMAS = {
    "catastrophic": lambda: _text(pattern=CATASTROPHIC),
    "backreference": lambda: _text(pattern=r"^(a)\1$"),
    "deep": _deep,
    "huge": _huge,
}

server = Hostile("hostile")


@server.tool(title="Echo")
async def echo(text: Any = "") -> str:
    """Says the text back."""
    return f"echo: {text}"


@server.tool(title="Ping")
async def ping() -> str:
    """Answers pong."""
    return "pong"


if __name__ == "__main__":
    server.run()
