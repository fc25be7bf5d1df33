"""The client the MCP conformance suite drives (`make conformance`): Glassbox's own MCP client
(chat.agent.mcp: its connection, and its elicitation handling) against the suite's test
server. The suite runs `client.py <server-url>` with MCP_CONFORMANCE_SCENARIO set, and
MCP_CONFORMANCE_CONTEXT (JSON) for scenarios that need more.

One function per kind of scenario (SCENARIOS); a scenario not named runs the default, which
lists the tools and calls each. A server's questions are answered by a scripted person
(ScriptedAsker): accept, with the form's defaults filled in (SEP-1034)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()

from chat.agent.mcp.config import spec_from_mapping  # noqa: E402
from chat.agent.mcp.connections import Connection  # noqa: E402
from chat.agent.mcp.elicit_schema import check_answer, read_form  # noqa: E402
from chat.agent.questions import Question, Reply, ask_with  # noqa: E402

logger = logging.getLogger("conformance")


class ScriptedAsker:
    """Answers as a person who accepts every question as the server proposed it: a form
    with its defaults (checked against the form as a page's answer is), a URL as opened."""

    def __init__(self) -> None:
        self.asked: list[Question] = []

    async def ask(self, question: Question) -> Reply:
        self.asked.append(question)
        if question.mode == "url":
            return Reply("accept")
        fields = read_form(question.schema)
        defaults = {f.name: f.default for f in fields if f.default is not None}
        return Reply("accept", check_answer(fields, defaults))

    async def completed(self, server: str, elicitation_id: str) -> None:
        logger.info("the server completed %s", elicitation_id)


async def connected(url: str) -> Connection:
    connection = Connection(spec_from_mapping({"name": "conformance", "url": url}))
    async with asyncio.timeout(30):
        await connection.tried.wait()
    if connection.client is None:
        raise SystemExit(f"no session: {connection.reason}")
    return connection


async def call(connection: Connection, tool: str, arguments: dict[str, Any]) -> None:
    async def progress(done: float, total: float | None, message: str | None) -> None:
        logger.info("progress %s/%s %s", done, total, message or "")

    result = await connection.call(tool, arguments, progress)
    logger.info("%s -> %s", tool, result.model_dump(mode="json", exclude_none=True))


def arguments_for(tool: Any) -> dict[str, Any]:
    """Plausible arguments from a tool's schema: numbers 1, text "test", flags true."""
    samples = {"number": 1, "integer": 1, "string": "test", "boolean": True}
    properties = (tool.input_schema or {}).get("properties", {})
    return {name: samples.get(spec.get("type"), "test") for name, spec in properties.items()}


async def list_only(connection: Connection, context: dict[str, Any]) -> None:
    """Initialize: the session is open and the tools are listed."""
    logger.info("tools: %s", [tool.name for tool in connection.listed])


async def call_every_tool(connection: Connection, context: dict[str, Any]) -> None:
    """Calls each listed tool once, answering whatever it asks."""
    for tool in connection.listed:
        await call(connection, tool.name, arguments_for(tool))


Scenario = Callable[[Connection, dict[str, Any]], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {
    "initialize": list_only,
    "tools_call": call_every_tool,
    "elicitation-sep1034-client-defaults": call_every_tool,
    "sse-retry": call_every_tool,
}


async def main(url: str, scenario: str, context: dict[str, Any]) -> None:
    ask_with(ScriptedAsker())
    connection = await connected(url)
    try:
        await SCENARIOS.get(scenario, call_every_tool)(connection, context)
    finally:
        await connection.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    asyncio.run(
        main(
            sys.argv[-1],
            os.environ.get("MCP_CONFORMANCE_SCENARIO", ""),
            json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}"),
        )
    )
