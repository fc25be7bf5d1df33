"""An MCP server for the tests whose tool schemas are hostile, built with the `mcp` SDK: it
serves one tool, `echo`, and lists it as HOSTILE_SCHEMA says (by environment):

- `catastrophic`: `text` must match `^(a+)+$` (exponential for a backtracking engine);
- `backreference`: `text` must match `^(a)\\1$` (RE2 cannot take it), beside a plain `ping`;
- `deep`: a schema HOSTILE_DEPTH levels deep (1,000: more than the SDK can carry), beside
  `ping`;
- `huge`: a schema of HOSTILE_HUGE_KB (10 MB: a listing over the largest message Glassbox
  reads), beside `ping`;
- `many`: 10,000 tools (`echo_0` … `echo_9999`);
- `dirty`: its tools' titles and descriptions hold NULs and lone surrogates (written as
  JSON escapes, which the SDK cannot write itself: see `raw`).

With any other HOSTILE_SCHEMA (`calls`, or `dirty`), all its tools are listed, and these
misbehave when called:

- `big`: a result of HOSTILE_BIG_MB (50) MB of text; `structured`: a structured result of
  HOSTILE_ITEMS (25,000) objects;
- `garbled`: a result whose line holds bytes that are not UTF-8, NULs and lone surrogates;
- `chatter`: 10,000 progress notifications, then 10,000 log messages, as fast as it can,
  then an answer;
- `forever`: never answers;
- `portal`: asks the person to visit a URL of 100 KB (URL mode), then answers;
- `nag`: asks the person a question, again and again, whatever the answer.

Run over stdio: `python -m tests.support.hostile_mcp_server`; over Streamable HTTP: `... --http
PORT` (a 2026 server answers a call with a JSON body unless the call reports progress first:
see `big`); over the legacy SSE transport: `... --sse PORT`. Over HTTP, `garbled` answers a
marker of GARBLED's length that the server's wire rewrites to it (the SDK cannot write it);
`dirty` and `chatter` write raw lines and are for stdio only."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

CASE = os.environ.get("HOSTILE_SCHEMA", "catastrophic")
CATASTROPHIC = "^(a+)+$"
MANY = 10_000
FLOOD = 10_000
BIG = int(os.environ.get("HOSTILE_BIG_MB", "50")) * 1024 * 1024
HUGE_URL = "https://portal.example.com/confirm?token=" + "a" * 100_000
# Bytes no UTF-8 decoder takes, then a NUL and a lone surrogate as JSON escapes.
GARBLED = b"caf\xe9 \xff\xfe ok \\u0000 nul \\ud800 half"
DIRTY = "Ec\\u0000ho \\udc00"
LOG = (
    b'{"jsonrpc":"2.0","method":"notifications/message",'
    b'"params":{"level":"info","data":"log %d"}}\n'
)
PROGRESS = (
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,'
    b'"progress":%d,"total":10000,"message":"Step %d"}}\n'
)
LISTED = {"resultType": "complete", "cacheScope": "private", "ttlMs": 0}
# The wire, taken before the SDK points fd 1 at stderr while it serves.
WIRE = os.dup(1)
# Over HTTP, `garbled` answers this, and the wire carries GARBLED in its place.
MARKER = b"G" * len(GARBLED)
OVER_HTTP = False


def raw(request_id: Any, result: bytes) -> None:
    """Answers a request with a line written as it is: the SDK's writer refuses lone
    surrogates and cannot write bytes that are not UTF-8. (Its own answer, sent after this
    one, is for a request the client no longer waits for.)"""
    line = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":'
    os.write(WIRE, line + result + b"}\n")


class Hostile(MCPServer):
    async def _handle_list_tools(self, ctx, params):
        listed = await super()._handle_list_tools(ctx, params)
        if CASE == "dirty":
            tools = [
                {
                    "name": tool.name,
                    "title": DIRTY,
                    "description": f"Says {DIRTY} back",
                    "inputSchema": tool.input_schema,
                }
                for tool in listed.tools
            ]
            raw(
                ctx.request_id,
                json.dumps(LISTED | {"tools": tools}).encode().replace(b"\\\\", b"\\"),
            )
        return listed

    async def list_tools(self) -> list[types.Tool]:
        tools = {tool.name: tool for tool in await super().list_tools()}
        echo, ping = tools["echo"], tools["ping"]
        if CASE == "many":
            return [echo.model_copy(update={"name": f"echo_{n}"}) for n in range(MANY)]
        if CASE not in SCHEMAS:
            return list(tools.values())
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
    return _text(description="x" * (int(os.environ.get("HOSTILE_HUGE_KB", "10240")) * 1024))


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


@server.tool(title="Priority")
async def priority() -> str:
    """Says its process's CPU priority (nice value)."""
    return str(os.getpriority(os.PRIO_PROCESS, 0))


@server.tool(title="Big", structured_output=False)
async def big(ctx: Context) -> str:
    """Answers 50 MB of text; with HOSTILE_STREAM=1 it reports progress first, so a 2026
    Streamable HTTP server answers with an event stream, not a JSON body."""
    if os.environ.get("HOSTILE_STREAM") == "1":
        await ctx.report_progress(1, 2, "Writing")
    return "x" * BIG


@server.tool(title="Structured")
async def structured() -> dict[str, Any]:
    """Answers a structured result of many objects."""
    items = int(os.environ.get("HOSTILE_ITEMS", "25000"))
    return {"items": [{"n": n, "name": f"item {n}"} for n in range(items)]}


@server.tool(title="Garbled", structured_output=False)
async def garbled(ctx: Context) -> str:
    """Answers bytes that are not UTF-8, a NUL and a lone surrogate."""
    if OVER_HTTP:
        return MARKER.decode()
    text = b'{"type":"text","text":"' + GARBLED + b'"}'
    raw(
        ctx.request_context.request_id,
        b'{"resultType":"complete","content":[' + text + b'],"isError":false}',
    )
    return "the SDK's own answer (too late)"


@server.tool(title="Chatter")
async def chatter(ctx: Context) -> str:
    """Sends 10,000 progress notifications and 10,000 log messages, then answers."""
    # Written as they are, a thousand lines at a write: the SDK's writer sends a few thousand
    # a second, and a flood is ten thousand a second. (It sends a 2026 client only the log
    # messages it asked for, too.)
    # The SDK's client makes a call's progress token of its request id.
    token = json.dumps(ctx.request_context.request_id).encode()
    for start in range(0, FLOOD, 1000):
        os.write(WIRE, b"".join(PROGRESS % (token, n, n) for n in range(start + 1, start + 1001)))
    for start in range(0, FLOOD, 1000):
        os.write(WIRE, b"".join(LOG % n for n in range(start, start + 1000)))
    return "said a lot"


@server.tool(title="Forever")
async def forever() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "never"


@server.tool(title="Portal")
async def portal(ctx: Context) -> str | types.InputRequiredResult:
    """Asks the person to visit a URL of 100 KB (a 2026-07-28 question: the call answers
    that it needs input, and is called again with the answer)."""
    answered = (ctx.input_responses or {}).get("visit")
    if not isinstance(answered, types.ElicitResult):
        visit = types.ElicitRequestURLParams(message="Confirm your account", url=HUGE_URL)
        return types.InputRequiredResult(
            input_requests={"visit": types.ElicitRequest(params=visit)}
        )
    return f"portal: {answered.action}"


@server.tool(title="Nag")
async def nag(ctx: Context) -> types.InputRequiredResult:
    """Asks again, whatever the answer: every call needs more input."""
    form = types.ElicitRequestFormParams(
        message="Are you sure?",
        requested_schema={"type": "object", "properties": {"sure": {"type": "boolean"}}},
    )
    asked = len(ctx.input_responses or {})
    return types.InputRequiredResult(
        input_requests={f"sure-{asked}": types.ElicitRequest(params=form)}
    )


def garbling(app: Any) -> Any:
    """The app, with MARKER written as GARBLED in what it sends (as long: a body's length
    holds)."""

    async def served(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.body":
                message = message | {"body": message.get("body", b"").replace(MARKER, GARBLED)}
            await send(message)

        await app(scope, receive, sending)

    return served


def main() -> None:
    global OVER_HTTP
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--sse", type=int, metavar="PORT", help="the legacy SSE transport")
    options = parser.parse_args()
    OVER_HTTP = bool(options.http or options.sse)
    if options.sse:
        app = server.sse_app()
    elif options.http:
        app = server.streamable_http_app()
    else:
        server.run()
        return
    port = options.http or options.sse
    uvicorn.run(garbling(app), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
