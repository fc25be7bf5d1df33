"""Which of a server's listed tools may be offered: those whose schemas can be checked in
bounded time (chat.agent.schemas), up to the bound on tools per server. The others are
left out with a reason in words, shown on the admin's health page."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import mcp_types as types
from django.utils.translation import gettext as _

from chat.agent.mcp.stdio import STRUCTURED_DROPPED
from chat.agent.schemas import SchemaBounds, Unsupported, screened, validator

# Reasons kept per listing: a server that lists thousands of bad tools says so in a line.
REASON_LIMIT = 20


def offerable(
    tools: Iterable[types.Tool], bounds: SchemaBounds
) -> tuple[tuple[types.Tool, ...], tuple[str, ...]]:
    """The tools to offer, in the server's order, and why the others are not."""
    kept: list[types.Tool] = []
    reasons: list[str] = []
    refused = dropped = 0
    for tool in tools:
        if len(kept) >= bounds.tools_per_server:
            dropped += 1  # not screened: never offered anyway
            continue
        why = screened(tool.input_schema, bounds)
        if not why and tool.output_schema is not None:
            why = screened(tool.output_schema, bounds)
        if why:
            refused += 1
            if len(reasons) < REASON_LIMIT:
                reasons.append(
                    _("tool %(tool)s: %(why)s") % {"tool": _name(tool.name), "why": why}
                )
            continue
        kept.append(tool)
    if refused > len(reasons):
        reasons.append(
            _("%(count)d more tools were refused for their schemas")
            % {"count": refused - len(reasons)}
        )
    if dropped:
        reasons.append(
            _("%(count)d tools were not offered: a server may offer %(limit)d")
            % {"count": dropped, "limit": bounds.tools_per_server}
        )
    return tuple(kept), tuple(reasons)


def output_validators(tools: Iterable[types.Tool], bounds: SchemaBounds) -> dict[str, Any]:
    """The SDK's checks of each tool's results (mcp 2.3's ClientSession validates
    structuredContent against the outputSchema with Python's `re`), built by chat.agent.
    schemas instead: handed to the session in place of the ones it would compile."""
    built = {}
    for tool in tools:
        if tool.output_schema is not None:
            try:
                built[tool.name] = PastDropped(validator(tool.output_schema, bounds))
            except Unsupported:
                continue  # not offered (offerable refused it)
    return built


class PastDropped:
    """A tool's output check that lets past the marker standing for a structured result
    left out for its size (chat.agent.mcp.stdio): its call still ends, without it."""

    def __init__(self, checks: Any) -> None:
        self.checks = checks

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        if isinstance(instance, dict) and STRUCTURED_DROPPED in instance:
            return iter(())
        return self.checks.iter_errors(instance)


def _name(name: str) -> str:
    return name if len(name) <= 64 else name[:63] + "…"
