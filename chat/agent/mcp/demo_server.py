"""The demo MCP server: a slow tool that reports its progress, so the offline demo shows a
progress bar, and two that ask the person a question mid-call (MCP elicitation): a form to
fill (`draft_offer_letter`) and a page to visit (`open_payroll_portal`). Built with the
official `mcp` SDK; `make run` starts it over stdio, and
`python -m chat.agent.mcp.demo_server --http PORT` serves it over streamable HTTP.

It imports nothing of Glassbox: it stands for a team's own server."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from typing import Annotated, Literal

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import ToolAnnotations
from mcp_types import ElicitRequest, ElicitRequestURLParams, ElicitResult, InputRequiredResult
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

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


class OfferDetails(BaseModel):
    """The form `draft_offer_letter` asks for."""

    candidate: str = Field(title="Candidate", description="Full name on the letter")
    salary_eur: int = Field(title="Annual salary (EUR)", ge=10_000, le=500_000)
    remote: bool = Field(default=False, title="Fully remote")
    tone: Literal["formal", "friendly"] = Field(default="formal", title="Tone")


def ask_offer_details(role: str) -> Elicit[OfferDetails]:
    return Elicit(f"Who is the offer for {role} addressed to?", OfferDetails)


@server.tool(
    title="Draft an offer letter",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
async def draft_offer_letter(
    role: str,
    asked: Annotated[ElicitationResult[OfferDetails], Resolve(ask_offer_details)],
) -> str:
    """Drafts an offer letter for a role, asking the user for the candidate's details."""
    # The SDK asks in the protocol the session speaks: mid-call (2025-11-25), or by an
    # InputRequiredResult that the client answers in its next call (2026-07-28).
    if not isinstance(asked, AcceptedElicitation):
        return f"No letter drafted: the user chose {asked.action}."
    details = asked.data
    greeting = "Dear" if details.tone == "formal" else "Hi"
    where = " The position is fully remote." if details.remote else ""
    return (
        f"{greeting} {details.candidate}, we are pleased to offer you the {role} position "
        f"at EUR {details.salary_eur:,} a year.{where}"
    )


PORTAL = "Confirm the payroll export on the payroll portal."


@server.tool(
    title="Open the payroll portal",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
)
async def open_payroll_portal(ctx: Context) -> str | InputRequiredResult:
    """Asks the user to confirm the payroll export on the payroll portal (a page of its own,
    outside the chat)."""
    question = uuid.uuid4().hex
    url = f"https://payroll.example.com/confirm/{question}"
    if is_version_at_least(ctx.protocol_version or "", "2026-07-28"):
        answered = (ctx.input_responses or {}).get("portal")
        if not isinstance(answered, ElicitResult):
            ask = ElicitRequest(params=ElicitRequestURLParams(message=PORTAL, url=url))
            return InputRequiredResult(input_requests={"portal": ask})
        action = answered.action
    else:
        action = (await ctx.elicit_url(PORTAL, url, question)).action
        if action == "accept":
            # The demo portal confirms at once.
            await ctx.request_context.session.send_elicit_complete(question)
    if action != "accept":
        return f"The payroll export was not confirmed: the user chose {action}."
    return "The payroll export was confirmed on the portal."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    options = parser.parse_args()
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _stop_at_once)
    try:
        server.run()
    except* BrokenPipeError:
        # Its client went away without closing the session (it was killed): nobody is left
        # to read the answer, and the interpreter's last flush must not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _stop_at_once(_signum: int, _frame: object) -> None:
    """Ctrl+C where it runs in a terminal of its own (Glassbox starts it in a session of its
    own, and closes its stdin to stop it): it stops as asked, by the signal, as Python would,
    but without a traceback and without waiting for the thread that reads stdin, which
    nothing interrupts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


if __name__ == "__main__":
    main()
