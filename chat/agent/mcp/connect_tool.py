"""A server whose tools a turn cannot offer without waiting for it (one its user has not
connected in this process, one still opening with no tools remembered) is offered as one
tool that opens it. A question that needs none of its tools never waits for it and never
asks anybody; when the model calls it, the server opens (its user is asked to connect, if
they must), its tools join the turn's, and the same turn goes on with them.

Loads no SDK: the demo model reads the names from here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from activity.presenting.presentation import ToolLabels
from chat.agent.context import ToolContext
from chat.agent.mcp.config import ServerSpec
from chat.agent.questions import caller, paused
from chat.agent.tools import (
    FEEDBACK_ARG,
    FEEDBACK_SCHEMA,
    AgentTool,
    ToolError,
    ToolOutcome,
    ToolRegistry,
)

ICON = "🔌"
PREFIX = "connect_"
SUMMARY_LIMIT = 120


def connect_tool_name(server: str) -> str:
    return PREFIX + server


def connected_server(name: str) -> str | None:
    """The server a connect tool's name opens, or None for any other tool."""
    return name.removeprefix(PREFIX) if name.startswith(PREFIX) else None


# Opens the server for this turn and gives its tools; raises ToolError saying why not.
Opening = Callable[[], Awaitable[Sequence[AgentTool]]]


@dataclass(frozen=True, eq=False)  # one per server and turn: compared by identity
class ConnectTool:
    spec: ServerSpec
    opening: Opening
    # The turn's tools, which the server's join once it is open.
    registry: ToolRegistry

    @cached_property
    def name(self) -> str:
        return connect_tool_name(self.spec.name)

    @property
    def title(self) -> str:
        return _("Connect to %(server)s") % {"server": self.spec.name}

    @property
    def icon(self) -> str:
        return ICON

    @property
    def quiet(self) -> bool:
        return False

    @property
    def user_facing(self) -> bool:
        return True

    @property
    def needs_approval(self) -> bool:
        return False  # it only opens the server; each of its tools asks as it would

    @property
    def working_message(self) -> str:
        return _("Opening %(server)s…") % {"server": self.spec.name}

    @cached_property
    def labels(self) -> ToolLabels:
        values = {"server": self.spec.name}
        return ToolLabels(
            icon=ICON,
            done=gettext_lazy("Opened %(server)s") % values,
            failed=gettext_lazy("%(server)s did not open") % values,
        )

    @cached_property
    def schema(self) -> dict[str, Any]:
        server = self.spec.name
        if self.spec.oauth:
            how = (
                f"the user is asked to connect it with their account at {server} if they have not"
            )
        else:
            how = f"it waits for the {server} server to start"
        description = (
            f"Opens the MCP server “{server}”, whose tools are not offered yet: {how}, and "
            f"then its tools ({server}__…) are offered. Call it only when the question needs "
            f"{server}."
        )
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {FEEDBACK_ARG: FEEDBACK_SCHEMA},
                    "required": [FEEDBACK_ARG],
                    "additionalProperties": False,
                },
            },
        }

    def parse(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments.get(FEEDBACK_ARG, ""), str):
            raise ToolError(
                _("argument %(name)s has the wrong type") % {"name": repr(FEEDBACK_ARG)}
            )
        return {}

    async def run(self, parsed: dict[str, Any], context: ToolContext[Any]) -> ToolOutcome:
        this = caller()
        # The user's time to connect (or the server's to start) has its own limit.
        with paused(this.clock if this is not None else None):
            tools = await self.opening()
        joined = [tool for tool in tools if self.registry.get(tool.name) is None]
        for tool in joined:
            self.registry.register(tool)
        names = ", ".join(tool.name for tool in tools) or "none"
        return ToolOutcome(
            content=f"{self.spec.name} is open; its tools are offered now: {names}",
            summary=names if len(names) <= SUMMARY_LIMIT else names[: SUMMARY_LIMIT - 1] + "…",
            done_message=_("Opened %(server)s") % {"server": self.spec.name},
        )
