"""An MCP server for the benchmarks (the `mcp` SDK over stdio): a tool that sends `count`
progress notifications spread evenly over `seconds`, and one that asks a question and says
when the answer reached it."""

from __future__ import annotations

import asyncio
import time

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("bench")


@server.tool(title="Flood")
async def flood(count: int, seconds: float, ctx: Context) -> str:
    loop = asyncio.get_running_loop()
    start = loop.time()
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"Notification {step} of {count}")
        wait = start + seconds * step / count - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
    return f"sent {count}"


WORD = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


@server.tool(title="Time the answer")
async def time_answer(ctx: Context) -> str | types.InputRequiredResult:
    """Asks for a word (the 2026-07-28 way) and says when the answer reached it, by
    CLOCK_MONOTONIC, which every process of the machine reads alike."""
    answered = (ctx.input_responses or {}).get("word")
    if not isinstance(answered, types.ElicitResult):
        form = types.ElicitRequestFormParams(message="Say a word", requested_schema=WORD)
        return types.InputRequiredResult(input_requests={"word": types.ElicitRequest(params=form)})
    return f"{answered.action} reached the server at {time.monotonic():.6f}"


if __name__ == "__main__":
    server.run()
