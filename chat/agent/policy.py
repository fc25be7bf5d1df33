"""What the agent runs with and is allowed to do, handed to it by whoever runs it: the agent
reads no settings (the turn pipeline builds this from them, chat.turns.policy)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from chat.agent.tools import AgentTool


@dataclass(frozen=True, slots=True)
class AgentPolicy:
    model: str
    # Rounds of tool calls before the model must answer without tools.
    max_tool_rounds: int = 4
    # The most one tool call may take, in seconds.
    tool_timeout: float = 20.0
    # Which tools ask their user first, by name, over each tool's own flag.
    approval: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    # Which API the model is asked through (chat.agent.model_api).
    model_api: str = "chat_completions"
    # Ask the provider for token usage in the stream (stream_options.include_usage).
    stream_usage: bool = True
    # Over the Responses API, the reasoning summary asked for ("off": no reasoning options).
    reasoning_summary: str = "auto"
    # The answer's language when the turn names none and no language is active.
    language: str = "en"

    def asks_first(self, tool: AgentTool) -> bool:
        """The tool's own flag, unless `approval` overrides it by name."""
        return bool(self.approval.get(tool.name, tool.needs_approval))
