"""An MCP server for the tests, built with the `mcp` SDK like any team's server: tools that
report progress, flood, fail, hang, die mid-call, change the tool list, write hostile text and
ask the user questions (a secret in form mode, a page to visit the 2025-11-25 way).
Run over stdio: `python -m tests.support.mcp_server`; over HTTP: `... --http PORT`.

Two ways of behaving like servers nobody here wrote, by environment: TESTBENCH_NO_LISTEN=1
serves no `subscriptions/listen` (as mcp-server-time, -git and -fetch: they answer -32601);
TESTBENCH_FRAGILE=1 dies right after it has listed its tools; TESTBENCH_NO_RESULT_TYPE=1 (over
stdio) writes its results without `resultType`, as a server may (see `WithoutResultType`);
over HTTP, TESTBENCH_LEGACY=1
speaks only the 2025 protocol, with sessions; with it, TESTBENCH_NO_GET=1 answers 405 to the
optional GET stream and TESTBENCH_FORGETFUL=1 forgets the session at every call (see
`serve_as_configured`); TESTBENCH_LEDGER names a file that
`delete_record` appends each deletion to (to count the calls that ran); TESTBENCH_START_GATE
names a file the server waits for before it serves (a server slow to start)."""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path
from typing import Literal

import mcp_types as types
from mcp import MCPError
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel


class Bench(MCPServer):
    async def list_tools(self):
        tools = await super().list_tools()
        if os.environ.get("TESTBENCH_FRAGILE"):
            asyncio.get_running_loop().call_later(0.05, os._exit, 4)
        for tool in tools:
            if tool.name in TASKS:
                tool.execution = types.ToolExecution(task_support=TASKS[tool.name])
        return tools


# How each of these tools says it may run as an MCP task (servers of the 2025-11-25 protocol).
TASKS: dict[str, Literal["forbidden", "optional", "required"]] = {
    "research": "required",
    "summarize": "optional",
}


server = Bench("testbench", subscriptions=False if os.environ.get("TESTBENCH_NO_LISTEN") else None)
HOSTILE = '<img src=x onerror="window.pwned=1">'


@server.tool(title="Count steps")
async def count(steps: int, ctx: Context, known_total: bool = True) -> str:
    """Counts to `steps`, reporting each step."""
    for step in range(1, steps + 1):
        total = steps if known_total else None
        await ctx.report_progress(step, total, f"Step {step} of {steps}")
    return f"counted to {steps}"


@server.tool(title="Flood")
async def flood(count: int, ctx: Context) -> str:
    """Sends `count` progress notifications as fast as it can."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"Notification {step}")
    return f"sent {count}"


@server.tool(
    title="Delete a record",
    annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False),
)
async def delete_record(record: str) -> str:
    """Deletes a record (it says it destroys, so it asks first by default)."""
    if ledger := os.environ.get("TESTBENCH_LEDGER"):
        await asyncio.to_thread(_append, Path(ledger), f"deleted {record}\n")
    return f"deleted {record}"


@server.tool(title="Refuse")
async def refuse() -> str:
    """Always reports an error."""
    raise ToolError("the ledger is locked for maintenance")


@server.tool(title="Break the protocol")
async def protocol_error() -> str:
    """Answers with a JSON-RPC error instead of a result."""
    raise MCPError(code=-32602, message="the request was malformed")


@server.tool(title="Crash")
async def crash(ctx: Context) -> str:
    """Dies in the middle of the call."""
    await ctx.report_progress(1, 2, "About to fall over")
    os._exit(3)


@server.tool(title="Hang")
async def hang(marker: str, ctx: Context) -> str:
    """Waits until it is cancelled, and leaves a file saying so."""
    await ctx.report_progress(1, None, "Waiting for ever")
    try:
        await asyncio.sleep(3600)
    except BaseException:
        _leave(marker)
        raise
    return "never"


def _append(path: Path, line: str) -> None:
    with path.open("a") as file:
        file.write(line)


def _leave(marker: str) -> None:
    Path(marker).write_text("cancelled")


# What `migrate` logs, in order: a level of every kind but three, from two loggers, the
# server's own words as hostile as they come.
MIGRATION_LOG: list[tuple[types.LoggingLevel, str, str | dict[str, str]]] = [
    ("debug", "db", "connecting to db-1"),
    ("info", "db", "3 tables to migrate"),
    ("notice", "", "orders: 1,204 rows"),
    ("warning", "schema", f"table {HOSTILE} has no index"),
    ("error", "db", {"table": "audit", "error": "locked"}),
    ("critical", "db", "bell\x07 and NUL\x00 in a line\nthat goes on " + "and on " * 100),
]


@server.tool(title="Migrate")
async def migrate(ctx: Context, gate: str = "", chatter: int = 0) -> str:
    """Logs each step at its level while it works (MIGRATION_LOG), `chatter` more at debug;
    with a gate, waits at the end until that file exists."""
    for level, logger, data in MIGRATION_LOG:
        await ctx.log(level, data, logger_name=logger or None)  # ty: ignore[deprecated]
    for count in range(chatter):
        await ctx.log("debug", f"row {count}", logger_name="db")
    while gate and not await asyncio.to_thread(Path(gate).exists):  # noqa: ASYNC110
        await asyncio.sleep(0.02)  # the gate is a file the test writes: polled
    return "migrated 2 of 3 tables"


@server.tool(title=f"Hostile {HOSTILE}", description=f"Writes markup {HOSTILE}")
async def hostile(ctx: Context, gate: str = "") -> str:
    """Writes markup everywhere it can; with a gate, waits halfway until that file exists."""
    await ctx.report_progress(1, 2, f"<script>window.pwned=2</script>{HOSTILE}")
    while gate and not await asyncio.to_thread(Path(gate).exists):  # noqa: ASYNC110
        await asyncio.sleep(0.02)  # the gate is a file the test writes: polled
    return f"<script>window.pwned=3</script>{HOSTILE} **bold**"


@server.tool(title="Picture")
def picture() -> list:
    """Returns an image and a caption."""
    return [Image(data=b"\x89PNG\r\n\x1a\n" + b"0" * 16, format="png"), "a tiny picture"]


@server.tool(title="Point")
def point() -> list:
    """Points to resources: a report on the web, a link a hostile server wrote, and a file
    it embeds."""
    return [
        "Here is what I found.",
        types.ResourceLink(
            type="resource_link",
            name="report",
            title="Q3 report",
            uri="https://example.org/q3.pdf",
            mime_type="application/pdf",
        ),
        types.ResourceLink(
            type="resource_link",
            name="trap",
            title=f"Click {HOSTILE}",
            uri="javascript:window.pwned=4",
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="file:///srv/exports/chart.png", mime_type="image/png", blob="iVBORw0KGgo="
            ),
        ),
    ]


@server.tool(title="Trace")
async def trace(ctx: Context) -> str:
    """Answers with the W3C trace context its request carried (`_meta.traceparent`)."""
    meta = ctx.request_context.meta or {}
    return str(meta.get("traceparent", "no traceparent"))


@server.tool(title="Session")
async def session(ctx: Context) -> str:
    """Answers with the id of the MCP session its request came in ("no session" over stdio
    and stateless HTTP)."""
    return (ctx.headers or {}).get("mcp-session-id") or "no session"


@server.tool(title="Research")
async def research(topic: str) -> str:
    """Runs only as an MCP task (it says so when it is listed)."""
    return f"researched {topic}"


@server.tool(title="Summarize")
async def summarize(text: str) -> str:
    """May run as an MCP task, or as a plain call."""
    return f"summary of {text}"


# A form the spec has no word for: a secret asked in form mode (servers should use URL mode).
SECRET_FORM = {
    "type": "object",
    "properties": {
        "account": {"type": "string", "title": "Account"},
        "pin": {"type": "string", "title": "PIN", "format": "password"},
        "token": {"type": "string", "title": "Token", "writeOnly": True},
    },
    "required": ["account", "pin"],
}


@server.tool(title="Sign in")
async def sign_in(ctx: Context) -> str | types.InputRequiredResult:
    """Asks for an account and its PIN, and says what it received (to show it was sent)."""
    answered = (ctx.input_responses or {}).get("secret")
    if not isinstance(answered, types.ElicitResult):
        form = types.ElicitRequestFormParams(message="Sign in", requested_schema=SECRET_FORM)
        return types.InputRequiredResult(
            input_requests={"secret": types.ElicitRequest(params=form)}
        )
    return f"{answered.action}: {sorted((answered.content or {}).items())}"


@server.tool(title="Visit the portal")
async def visit_portal(ctx: Context) -> str:
    """Asks the user to visit a page (URL mode, the 2025-11-25 way: during the call) and says
    it is done at once."""
    asked = await ctx.elicit_url("Visit the portal", "https://portal.example.com/go", "visit-1")
    if asked.action == "accept":
        await ctx.request_context.session.send_elicit_complete("visit-1")
    return f"portal: {asked.action}"


class Word(BaseModel):
    word: str


@server.tool(title="Time the answer")
async def time_answer(ctx: Context) -> str | types.InputRequiredResult:
    """Asks for a word (the 2026-07-28 way, or during the call on a 2025-11-25 session) and
    says when the answer reached it, by CLOCK_MONOTONIC, which every process of the machine
    reads alike."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        asked = await ctx.elicit("Say a word", Word)
        return f"{asked.action} reached the server at {time.monotonic():.6f}"
    answered = (ctx.input_responses or {}).get("word")
    if not isinstance(answered, types.ElicitResult):
        form = types.ElicitRequestFormParams(
            message="Say a word", requested_schema=Word.model_json_schema()
        )
        return types.InputRequiredResult(input_requests={"word": types.ElicitRequest(params=form)})
    return f"{answered.action} reached the server at {time.monotonic():.6f}"


# A request for the topic "tools" offers the model a tool of the server's.
POEM_TOOL = types.Tool(name="rhyme", input_schema={"type": "object"})


def _poem_request(topic: str) -> types.CreateMessageRequestParams:
    return types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(
                role="user",
                content=types.ImageContent(
                    type="image", data="iVBORw0KGgo=", mime_type="image/png"
                ),
            ),
            types.SamplingMessage(
                role="user",
                content=types.TextContent(type="text", text=f"Write a haiku about {topic}"),
            ),
        ],
        system_prompt=f"You are a poet. {HOSTILE}",
        max_tokens=60,
        model_preferences=types.ModelPreferences(
            hints=[types.ModelHint(name="claude-haiku")], intelligence_priority=0.8
        ),
        tools=[POEM_TOOL] if topic == "tools" else None,
    )


def _poem_of(result: types.CreateMessageResult | types.CreateMessageResultWithTools) -> str:
    content = result.content if isinstance(result.content, types.TextContent) else None
    text = content.text if content is not None else "(no text)"
    return f"poem by {result.model} ({result.stop_reason}): {text}"


@server.tool(title="Write a poem")
async def write_poem(topic: str, ctx: Context) -> str | types.InputRequiredResult:
    """Asks the client's model for a haiku (MCP sampling: during the call on a 2025-11-25
    session, as an input request on 2026-07-28) and returns what it wrote; a refusal on a
    2025-11-25 session is the tool's answer."""
    asked = _poem_request(topic)
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        try:
            result = await ctx.session.create_message(
                asked.messages,
                max_tokens=asked.max_tokens,
                system_prompt=asked.system_prompt,
                model_preferences=asked.model_preferences,
            )
        except MCPError as exc:
            return f"no poem: {exc.error.message}"
        return _poem_of(result)
    answered = (ctx.input_responses or {}).get("poem")
    if not isinstance(answered, types.CreateMessageResult):
        return types.InputRequiredResult(
            input_requests={"poem": types.CreateMessageRequest(params=asked)}
        )
    return _poem_of(answered)


async def grown() -> str:
    return "I was added later"


@server.tool(title="Grow")
async def grow(ctx: Context) -> str:
    """Adds the tool `grown` and says the tool list changed."""
    server.add_tool(grown, title="Grown")
    await ctx.notify_tools_changed()
    return "grew"


def serve_as_configured(port: int) -> None:
    """Streamable HTTP as older servers serve it, by environment: only the 2025 protocol,
    whose sessions a restart forgets (TESTBENCH_LEGACY), and without the optional GET
    stream, which the spec lets a server refuse with 405 (TESTBENCH_NO_GET); a server that
    forgets the session at every call (TESTBENCH_FORGETFUL); one that answers a session it
    does not know with 400 and a JSON-RPC error without an id, as the TypeScript SDK's
    servers do (TESTBENCH_SESSION_400)."""
    import uvicorn
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
    from starlette.responses import JSONResponse, PlainTextResponse

    app = server.streamable_http_app(host="127.0.0.1")
    legacy = bool(os.environ.get("TESTBENCH_LEGACY"))
    no_get = bool(os.environ.get("TESTBENCH_NO_GET"))
    forgetful = bool(os.environ.get("TESTBENCH_FORGETFUL"))
    session_400 = bool(os.environ.get("TESTBENCH_SESSION_400"))
    known: set[bytes] = set()
    no_session = {
        "jsonrpc": "2.0",
        "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
    }
    unknown = {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "Not found"}}
    forgot = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Session not found"},
    }

    async def as_configured(scope, receive, send):
        if scope["type"] == "http":
            version = dict(scope["headers"]).get(b"mcp-protocol-version", b"").decode()
            if no_get and scope["method"] == "GET":
                await PlainTextResponse("no stream here", status_code=405)(scope, receive, send)
                return
            if legacy and version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                await JSONResponse(unknown, status_code=400)(scope, receive, send)
                return
            session = dict(scope["headers"]).get(b"mcp-session-id")
            if session_400 and session is not None and session not in known:
                await JSONResponse(no_session, status_code=400)(scope, receive, send)
                return
            send = remembering(send, known)
            if forgetful and scope["method"] == "POST":
                body = b""
                while True:
                    message = await receive()
                    body += message.get("body", b"")
                    if not message.get("more_body"):
                        break
                if b'"tools/call"' in body:
                    await JSONResponse(forgot, status_code=404)(scope, receive, send)
                    return

                receive = replay(body, receive)
        await app(scope, receive, send)

    def remembering(send, known):
        """Notes the session each response opens."""

        async def noting(message):
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        known.add(value)
            await send(message)

        return noting

    def replay(body, receive):
        """The request's body once more, for the app; then the connection's own messages."""
        sent = False

        async def again():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return again

    uvicorn.run(as_configured, host="127.0.0.1", port=port, log_level="warning")


class WithoutResultType:
    """The server's write stream, leaving `resultType` out of every "complete" result: the
    2026-07-28 protocol lets a server omit it (SEP-2322), and the SDK always writes it."""

    def __init__(self, stream) -> None:
        self.stream = stream

    async def send(self, item) -> None:
        message = item.message
        complete = isinstance(message, types.JSONRPCResponse) and (
            message.result.get("resultType") == "complete"
        )
        if complete:
            del message.result["resultType"]
        await self.stream.send(item)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self):
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self.stream.__aexit__(*exc)


async def serve_without_result_type() -> None:
    """As `MCPServer.run_stdio_async`, with the write stream above."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write):
        options = lowlevel.create_initialization_options()
        await lowlevel.run(read, WithoutResultType(write), options)


def main() -> None:
    if gate := os.environ.get("TESTBENCH_START_GATE"):
        # A server slow to start, for as long as the test says: until the gate file exists.
        while not Path(gate).exists():
            time.sleep(0.02)
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--sse", type=int, metavar="PORT", help="the legacy SSE transport")
    options = parser.parse_args()
    if options.sse:
        server.run("sse", host="127.0.0.1", port=options.sse)
    elif options.http and os.environ.get("TESTBENCH_LEGACY"):
        serve_as_configured(options.http)
    elif options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    elif os.environ.get("TESTBENCH_NO_RESULT_TYPE"):
        asyncio.run(serve_without_result_type())
    else:
        server.run()


if __name__ == "__main__":
    main()
