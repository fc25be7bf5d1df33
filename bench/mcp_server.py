"""An MCP server for the benchmarks (the `mcp` SDK over stdio): one tool that sends `count`
progress notifications spread evenly over `seconds`."""

from __future__ import annotations

import asyncio

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


if __name__ == "__main__":
    server.run()
