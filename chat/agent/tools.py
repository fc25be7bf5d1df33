"""The tool registry: each tool declares its JSON schema, how its steps read to a person, and
an async function that runs it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from activity.presentation import ToolLabels

FEEDBACK_ARG = "feedback_to_user"
FEEDBACK_LIMIT = 100

FEEDBACK_SCHEMA = {
    "type": "string",
    "description": (
        "A very short message for the user, in the user's language, saying what you are doing "
        "right now (the action, not the tool), at most 100 characters. "
        "Example: 'Looking up salary negotiation tips'."
    ),
}


def truncate_feedback(text: str, limit: int = FEEDBACK_LIMIT) -> str:
    """The model is asked for at most 100 characters; the server enforces it."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return text[:limit] + "..."


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool hands back: content for the model, a short summary for people."""

    content: Any
    summary: str
    done_message: str


class ToolError(Exception):
    """A failure the tool can explain in a few words (shown to the user and the model)."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[..., Awaitable[ToolOutcome]]
    icon: str
    working_message: str
    labels: ToolLabels
    user_facing: bool = True

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema; user-facing tools require feedback_to_user."""
        parameters = dict(self.parameters)
        properties = dict(parameters.get("properties", {}))
        required = list(parameters.get("required", []))
        if self.user_facing:
            properties = {FEEDBACK_ARG: FEEDBACK_SCHEMA, **properties}
            required = [FEEDBACK_ARG, *[r for r in required if r != FEEDBACK_ARG]]
        parameters.update(
            {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            }
        )
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }


@dataclass
class ToolRegistry:
    tools: dict[str, Tool] = field(default_factory=dict)

    def register(self, tool: Tool) -> Tool:
        if tool.name in self.tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self.tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self.tools.values()]

    def labels(self) -> dict[str, ToolLabels]:
        return {name: tool.labels for name, tool in self.tools.items()}

    def __bool__(self) -> bool:
        return bool(self.tools)
