"""An MCP server's tool as the agent's: namespaced by server, `feedback_to_user` added to its
schema, its arguments checked against the schema it declared, its progress reported live.
Everything the server wrote (titles, descriptions, results, errors) is untrusted text: it is
escaped where it is shown and cut to a budget before the model sees it."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import mcp_types as types
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from jsonschema.exceptions import SchemaError

from activity.presenting.presentation import ToolLabels
from activity.recording.events import AppView, Link
from chat.agent.context import ToolContext
from chat.agent.mcp.apps import AppUi, NoApp, app_ui, app_view, offered_to_model
from chat.agent.mcp.config import SEPARATOR
from chat.agent.mcp.connections import Connection, Unreachable
from chat.agent.mcp.logs import to_sink
from chat.agent.mcp.stdio import (
    MESSAGE_LIMIT,
    OVERSIZED,
    STRUCTURED_DROPPED,
    STRUCTURED_LIMIT,
    Traffic,
    megabytes,
)
from chat.agent.schemas import TooLong, Unsupported, first_error
from chat.agent.tools import (
    FEEDBACK_ARG,
    FEEDBACK_SCHEMA,
    ToolError,
    ToolOutcome,
    log_sink,
    progress_reporter,
)
from chat.agent.untrusted import fits

ICON = "🧩"
NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")
DESCRIPTION_LIMIT = 1024
TITLE_LIMIT = 60
REASON_LIMIT = 200
# What a result's links may take: beyond these, the audit keeps their count in the text.
LINK_LIMIT = 20
URI_LIMIT = 2048
LINK_TITLE_LIMIT = 80


def tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>` in the characters and length the model's API accepts."""
    return (server + SEPARATOR + NOT_A_NAME.sub("_", tool))[:64]


def one_line(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class McpTool:
    connection: Connection
    remote: types.Tool
    # Whether a call reads and keeps its interface (MCP Apps): not when its app made the call,
    # its frame is already there.
    shows_app: bool = True

    @property
    def server(self) -> str:
        return self.connection.spec.name

    @property
    def session_id(self) -> str:
        """The MCP session its calls run in now ("" for a server without sessions): read as
        a call ends, it is the session that answered."""
        return self.connection.session_id

    @cached_property
    def name(self) -> str:
        return tool_name(self.server, self.remote.name)

    @cached_property
    def title(self) -> str:
        """Its name for people, as MCP ranks them: its title, its annotations' title, its name."""
        hints = self.remote.annotations
        named = self.remote.title or (hints.title if hints is not None else None)
        return one_line(named or self.remote.name, TITLE_LIMIT)

    @cached_property
    def app(self) -> AppUi | None:
        """Its own interface (MCP Apps), if it declares one."""
        return app_ui(self.remote)

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
        """As the admin set it for this tool; by default, a tool that says it destroys and
        does not say it only reads."""
        chosen = self.connection.spec.approval
        if chosen is not None:
            return self.remote.name in chosen
        hints = self.remote.annotations
        return bool(hints and hints.destructive_hint and not hints.read_only_hint)

    @property
    def working_message(self) -> str:
        return _("Running “%(tool)s”…") % {"tool": self.title}

    @cached_property
    def labels(self) -> ToolLabels:
        values = {"tool": self.title}
        return ToolLabels(
            icon=ICON,
            done=gettext_lazy("Ran “%(tool)s”") % values,
            failed=gettext_lazy("“%(tool)s” failed") % values,
        )

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        schema = dict(self.remote.input_schema or {})
        schema.setdefault("type", "object")
        return schema

    @cached_property
    def schema(self) -> dict[str, Any]:
        parameters = dict(self.input_schema)
        parameters["properties"] = {
            FEEDBACK_ARG: FEEDBACK_SCHEMA,
            **parameters.get("properties", {}),
        }
        parameters["required"] = [FEEDBACK_ARG, *parameters.get("required", [])]
        description = self.remote.description or self.title
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": one_line(f"[{self.server}] {description}", DESCRIPTION_LIMIT),
                "parameters": parameters,
            },
        }

    def parse(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments.get(FEEDBACK_ARG, ""), str):
            raise ToolError(
                _("argument %(name)s has the wrong type") % {"name": repr(FEEDBACK_ARG)}
            )
        values = {k: v for k, v in arguments.items() if k != FEEDBACK_ARG}
        try:
            error = first_error(self.input_schema, values, self.connection.bounds)
        except Unsupported as exc:
            # Screened when listed (a tool remembered from before may not have been).
            raise ToolError(str(exc)) from None
        except TooLong as exc:
            raise ToolError(str(exc)) from None
        except SchemaError:
            return values  # the server's schema is its own business; it checks the call
        if error is not None:
            where = ".".join(str(part) for part in error.absolute_path) or "arguments"
            raise ToolError(
                _("argument %(name)s is invalid: %(problem)s")
                % {"name": repr(where), "problem": one_line(error.message, REASON_LIMIT)}
            )
        return values

    async def run(self, parsed: dict[str, Any], context: ToolContext[Any]) -> ToolOutcome:
        report = progress_reporter()
        logs = log_sink()
        traffic = self.connection.traffic
        skipped = traffic.progress_skipped

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            # Each report the reader coalesced away counts (chat.agent.mcp.stdio).
            nonlocal skipped
            count = 1 + traffic.progress_skipped - skipped
            skipped = traffic.progress_skipped
            report(progress, total, message, count)

        before = replace(self.connection.traffic)
        try:
            with self.connection.logging_to(to_sink(logs)):
                result = await self.connection.call(self.remote.name, parsed, progress)
        except Unreachable as exc:
            raise ToolError(
                _("the %(server)s server is unreachable: %(why)s")
                % {"server": self.server, "why": exc}
            ) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = getattr(exc, "error", None)
            if getattr(error, "code", None) == OVERSIZED:
                raise ToolError(dropped(getattr(error, "data", None))) from None
            message = getattr(error, "message", "") or type(exc).__name__
            raise ToolError(
                _("the %(server)s server refused the call: %(why)s")
                % {"server": self.server, "why": one_line(message, REASON_LIMIT)}
            ) from None
        logs.not_kept(self.connection.traffic.logs - before.logs)
        text = model_text(result.content)
        if result.is_error:
            raise ToolError(one_line(text or _("the tool reported an error"), REASON_LIMIT))
        limit = self.connection.limits.result_chars
        if len(text) > limit:
            text = (
                text[:limit]
                + "\n"
                + _("[cut: the result was %(count)d characters]") % {"count": len(text)}
            )
        notes = traffic_notes(before, self.connection.traffic)
        structured = result.structured_content
        # Left out by the process apart that parsed a large result (chat.agent.mcp.stdio);
        # one that came another way is walked on a worker thread.
        if (isinstance(structured, dict) and STRUCTURED_DROPPED in structured) or (
            structured is not None
            and not await asyncio.to_thread(fits, structured, STRUCTURED_LIMIT)
        ):
            structured = None
            notes.append(
                _("its structured result was over %(limit)d KB and was not kept")
                % {"limit": STRUCTURED_LIMIT // 1024}
            )
        app = await self._app_view(notes)
        done = _("“%(tool)s” finished") % {"tool": self.title}
        return ToolOutcome(
            content=text,
            summary=one_line(text, 120),
            done_message=f"{done} ({'; '.join(notes)})" if notes else done,
            structured=structured,
            links=links_of(result.content),
            app=app,
        )

    async def _app_view(self, notes: list[str]) -> AppView | None:
        """Its interface, read once for this call (after it, so a failed call shows none);
        one that cannot be shown is said on the done line, and the result stands."""
        if self.app is None or not self.shows_app:
            return None
        try:
            read = await self.connection.read_resource(self.app.resource_uri)
            view = app_view(self.app.resource_uri, read)
        except asyncio.CancelledError:
            raise
        except NoApp as exc:
            notes.append(str(exc))
            return None
        except Exception as exc:
            error = getattr(exc, "error", None)
            message = str(exc) if isinstance(exc, Unreachable) else getattr(error, "message", "")
            notes.append(
                _("its interface could not be read: %(why)s")
                % {"why": one_line(str(message) or type(exc).__name__, REASON_LIMIT)}
            )
            return None
        return replace(view, tool=self.name, server=self.server)


def dropped(data: Any) -> str:
    """Why a result over the bound failed its call, from the error the bounded reader put in
    its place (chat.agent.mcp.stdio, chat.agent.mcp.bounded_http)."""
    data = data if isinstance(data, dict) else {}
    words = {
        "size": megabytes(data.get("bytes", 0)),
        "limit": megabytes(data.get("limit", MESSAGE_LIMIT)),
    }
    if data.get("whole", True):
        return (
            _("the result was dropped: it was %(size)s MB, over the %(limit)s MB allowed") % words
        )
    # Over HTTP a stream of unknown length is left at the bound, unread.
    return _("the result was dropped: it was over the %(limit)s MB allowed") % words


def traffic_notes(before: Traffic, after: Traffic) -> list[str]:
    """What the server sent during a call that was cleaned or left out, in words."""
    notes = []
    if cleaned := after.cleaned - before.cleaned:
        notes.append(
            _("%(count)s characters that were not text were replaced") % {"count": f"{cleaned:,}"}
        )
    return notes


def model_text(content: list[types.ContentBlock]) -> str:
    """What the model reads of a result: its text; other content is named, never inlined,
    with its address when it has one (so the answer can point to it)."""
    parts = []
    for block in content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            parts.append(_("[an image (%(type)s) was left out]") % {"type": block.mime_type})
        elif isinstance(block, types.AudioContent):
            parts.append(_("[audio (%(type)s) was left out]") % {"type": block.mime_type})
        elif isinstance(block, types.ResourceLink):
            parts.append(
                _("[a link to “%(title)s”: %(uri)s]")
                % {"title": _link_title(block), "uri": one_line(block.uri, URI_LIMIT)}
            )
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(text)
            else:
                parts.append(
                    _("[a resource was left out: %(uri)s]")
                    % {"uri": one_line(resource.uri, URI_LIMIT)}
                )
        else:
            parts.append(_("[a resource was left out]"))
    return "\n".join(parts)


def _link_title(block: types.ResourceLink) -> str:
    return one_line(block.title or block.name or block.uri, LINK_TITLE_LIMIT)


def links_of(content: list[types.ContentBlock]) -> tuple[Link, ...]:
    """The addresses a result pointed to, for the audit and the tool's line: its resource
    links and the embedded resources that are not text (an image, a file)."""
    links = []
    for block in content:
        if isinstance(block, types.ResourceLink):
            links.append(Link(block.uri, _link_title(block), block.mime_type or ""))
        elif isinstance(block, types.EmbeddedResource) and not hasattr(block.resource, "text"):
            resource = block.resource
            name = resource.uri.rstrip("/").rsplit("/", 1)[-1] or resource.uri
            links.append(
                Link(resource.uri, one_line(name, LINK_TITLE_LIMIT), resource.mime_type or "")
            )
    return tuple(
        Link(link.uri, link.title, link.mime_type[:100])
        for link in links[:LINK_LIMIT]
        if len(link.uri) <= URI_LIMIT
    )


def tools_of(connections: list[Connection]) -> list[McpTool]:
    """The tools the model is offered: all but those only their app may call."""
    return [
        McpTool(connection, tool)
        for connection in connections
        for tool in connection.tools
        if offered_to_model(tool)
    ]
