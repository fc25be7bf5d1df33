"""The tool registry. A built-in tool is one small declared object: a name, a description, a
pydantic model of its arguments (the JSON schema is generated from it), an icon, its status
texts and an async `run(arguments, context)`, the context being the turn's
(chat.agent.context). Tools from MCP servers (chat.agent.mcp) have the same face."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from django.utils.functional import Promise
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.json_schema import GenerateJsonSchema

from activity.presenting.presentation import ToolLabels
from activity.recording.events import FEEDBACK_ARG, AppView, Link, Plan
from chat.agent.context import ToolContext

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
    """What a tool hands back: content for the model (a string goes as it is, anything else as
    JSON), a short summary for the audit, and the line the user sees when it is done."""

    content: Any
    summary: str
    done_message: str
    # Kept for the audit only (an MCP tool's structured content).
    structured: Any = None
    # The resources the result pointed to: stored, and shown on the tool's line.
    links: tuple[Link, ...] = ()
    # What the call was about (a search's query): named when calls of one tool run together.
    subject: str = ""
    # What a quiet tool shows in place of a done line: the plan its call set.
    line: Plan | None = None
    # The tool's own interface (MCP Apps) as read for this call, shown under its line.
    app: AppView | None = None


class ProgressReporter(Protocol):
    """Reports (progress, total, message); `count` is how many reports this one stands for
    (a transport that coalesced a flood passes on the latest with the number it replaced)."""

    def __call__(
        self, value: float, total: float | None, message: str | None, count: int = 1
    ) -> None: ...


def _nowhere(value: float, total: float | None, message: str | None, count: int = 1) -> None:
    pass


_reporter: contextvars.ContextVar[ProgressReporter | None] = contextvars.ContextVar(
    "tool_progress", default=None
)


def progress_reporter() -> ProgressReporter:
    """Where the running tool reports how far it is (progress, total, message); the agent
    loop shows it live. Read it in the tool's own task: callbacks run elsewhere."""
    return _reporter.get() or _nowhere


class LogSink(Protocol):
    """Where a running tool's server's log messages go (`notifications/message`): each one
    cleaned (a level of MCP's, the text and the logger's name made fit for a line), and the
    count of those its transport could not keep."""

    def report(self, level: str, data: str, logger: str) -> None: ...

    def not_kept(self, count: int) -> None: ...


class _NoSink:
    def report(self, level: str, data: str, logger: str) -> None:
        pass

    def not_kept(self, count: int) -> None:
        pass


_log_sink: contextvars.ContextVar[LogSink | None] = contextvars.ContextVar(
    "tool_logs", default=None
)


def log_sink() -> LogSink:
    """Where the running tool's server's log messages go; read in the tool's own task."""
    return _log_sink.get() or _NoSink()


def report_progress_to(
    reporter: ProgressReporter, logs: LogSink | None = None
) -> contextvars.Context:
    """A context for a tool's task in which progress goes to `reporter`, log messages to
    `logs`."""
    context = contextvars.copy_context()
    context.run(_reporter.set, reporter)
    context.run(_log_sink.set, logs)
    return context


class AgentTool(Protocol):
    """What the agent loop needs of a tool, built-in or from an MCP server."""

    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str | Promise: ...
    @property
    def icon(self) -> str: ...
    @property
    def working_message(self) -> str | Promise: ...
    @property
    def labels(self) -> ToolLabels: ...
    @property
    def user_facing(self) -> bool: ...
    @property
    def needs_approval(self) -> bool: ...
    @property
    def quiet(self) -> bool: ...
    @property
    def schema(self) -> dict[str, Any]: ...

    def parse(self, arguments: dict[str, Any]) -> Any: ...

    def run(self, parsed: Any, context: ToolContext[Any]) -> Awaitable[ToolOutcome]: ...


class Arguments(BaseModel):
    """A built-in tool's arguments: nothing the schema does not name."""

    model_config = ConfigDict(extra="forbid")


class ToolError(Exception):
    """A failure the tool can explain in a few words (shown to the user and the model)."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[Any, ToolContext[Any]], Awaitable[ToolOutcome]]
    icon: str
    # Lazy translations (gettext_lazy) are welcome: they are read in the turn's language.
    working_message: str | Promise
    labels: ToolLabels
    # Tools that only act in the page (the contact form) do not narrate themselves.
    user_facing: bool = True
    # Tools that act in the world (send mail, change records, spend money) ask the user first.
    needs_approval: bool = False
    # A tool whose outcome's `line` is all it shows (the plan): no line while it runs, none
    # when it is done; a failure still says so.
    quiet: bool = False
    # Its name for people, as a card that asks to run it says it (lazy, like the status
    # texts); the name when it has none.
    title: str | Promise = ""

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema; user-facing tools require feedback_to_user.
        Built once: pydantic's schema generation was a visible share of every turn's CPU."""
        generated = _without_class_titles(
            self.arguments.model_json_schema(schema_generator=_DeclaredTitles)
        )
        properties = dict(generated.get("properties", {}))
        required = list(generated.get("required", []))
        if self.user_facing:
            properties = {FEEDBACK_ARG: FEEDBACK_SCHEMA, **properties}
            required = [FEEDBACK_ARG, *required]
        parameters = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        if "$defs" in generated:
            parameters["$defs"] = generated["$defs"]
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def parse(self, arguments: dict[str, Any]) -> BaseModel:
        """Validated arguments, or a ToolError that says in a few words what was wrong."""
        values = {k: v for k, v in arguments.items() if k != FEEDBACK_ARG}
        if self.user_facing and not isinstance(arguments.get(FEEDBACK_ARG, ""), str):
            raise ToolError(
                _("argument %(name)s has the wrong type") % {"name": repr(FEEDBACK_ARG)}
            )
        try:
            return self.arguments.model_validate(values)
        except ValidationError as exc:
            raise ToolError(_first_problem(exc)) from None


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    name = ".".join(str(part) for part in error["loc"]) or "arguments"
    kind = error["type"]
    values = {"name": repr(name)}
    if kind == "missing":
        return _("missing argument %(name)s") % values
    if kind == "extra_forbidden":
        return _("unexpected argument %(name)s") % values
    if kind.endswith("_type"):
        return _("argument %(name)s has the wrong type") % values
    return _("argument %(name)s is invalid: %(problem)s") % {**values, "problem": error["msg"]}


class _DeclaredTitles(GenerateJsonSchema):
    """Only the titles a field declares (what a card labels it with): pydantic's own, made
    from the field's name, cost the model tokens and tell it nothing."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _without_class_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """Without the titles pydantic gives the model's classes (the schema's and its `$defs`')."""
    schema = {k: v for k, v in schema.items() if k != "title"}
    if "$defs" in schema:
        schema["$defs"] = {
            name: {k: v for k, v in part.items() if k != "title"}
            for name, part in schema["$defs"].items()
        }
    return schema


@dataclass
class ToolRegistry:
    tools: dict[str, AgentTool] = field(default_factory=dict)

    @classmethod
    def of(cls, tools: Iterable[AgentTool]) -> ToolRegistry:
        registry = cls()
        for tool in tools:
            registry.register(tool)
        return registry

    @classmethod
    def from_paths(cls, paths: Iterable[str]) -> ToolRegistry:
        """Tools named by dotted paths (the GLASSBOX_TOOLS setting's, chat.tools)."""
        tools = []
        for path in paths:
            tool = import_string(path)
            if not isinstance(tool, Tool):
                raise TypeError(f"{path} is not a chat.agent.tools.Tool")
            tools.append(tool)
        return cls.of(tools)

    def register(self, tool: AgentTool) -> AgentTool:
        if tool.name in self.tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self.tools[tool.name] = tool
        return tool

    def with_tools(self, tools: Iterable[AgentTool]) -> ToolRegistry:
        """This registry and more tools; a name already taken keeps its first tool."""
        more = {tool.name: tool for tool in tools if tool.name not in self.tools}
        return ToolRegistry({**self.tools, **more})

    def get(self, name: str) -> AgentTool | None:
        return self.tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema for tool in self.tools.values()]

    def names(self) -> tuple[str, ...]:
        return tuple(self.tools)

    def labels(self) -> dict[str, ToolLabels]:
        return {name: tool.labels for name, tool in self.tools.items()}

    def __bool__(self) -> bool:
        return bool(self.tools)
