"""The demo MCP server: one slow tool that reports its progress, so the offline demo shows a
progress bar. Built with the official `mcp` SDK; `make run` starts it over stdio, and
`python -m chat.agent.mcp.demo_server --http PORT` serves it over streamable HTTP.

It imports nothing of Glassbox: it stands for a team's own server."""

from __future__ import annotations

import argparse
import asyncio
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

SURVEYS = (
    ("Hays Salary Guide", 1.00),
    ("Robert Walters Survey", 1.04),
    ("Glassdoor Reports", 0.97),
    ("Stack Overflow Survey", 1.02),
    ("National Statistics Office", 0.95),
)
# Median annual salary in EUR of a few roles, before each survey's own bias.
ROLES = {"engineer": 58_000, "designer": 46_000, "manager": 72_000, "analyst": 51_000}
DEFAULT_MEDIAN = 50_000

server = MCPServer("surveys", instructions="Salary survey comparisons (demo data).")


class SurveyFigure(BaseModel):
    survey: str
    median_eur: int


class Comparison(BaseModel):
    role: str
    surveys: list[SurveyFigure]
    median_eur: int


def _delay() -> float:
    return float(os.environ.get("GLASSBOX_DEMO_MCP_DELAY", "0.6"))


@server.tool(
    title="Compare salary surveys",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
async def compare_salary_surveys(role: str, ctx: Context) -> Comparison:
    """Compare the median salary of a role across five salary surveys (demo data)."""
    base = next((v for k, v in ROLES.items() if k in role.casefold()), DEFAULT_MEDIAN)
    figures = []
    for number, (survey, bias) in enumerate(SURVEYS, start=1):
        await asyncio.sleep(_delay())
        figures.append(SurveyFigure(survey=survey, median_eur=int(round(base * bias, -2))))
        await ctx.report_progress(
            number, len(SURVEYS), f"Read survey {number} of {len(SURVEYS)}: {survey}"
        )
    medians = sorted(f.median_eur for f in figures)
    return Comparison(role=role, surveys=figures, median_eur=medians[len(medians) // 2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    options = parser.parse_args()
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
