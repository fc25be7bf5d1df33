"""MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) on the client side: the extension
Glassbox declares when it opens a session, and what a tool's `_meta.ui` says about it (the
`ui://` resource that is its interface, and who may call it: the model, the app, or both).

The server wrote `_meta`: it is untrusted. A tool whose `_meta.ui` is malformed is an ordinary
tool without an app, offered to the model as before; it is never hidden by a typo."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
from mcp.client.extension import ClientExtension, advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

Visibility = Literal["model", "app"]
VISIBILITIES: tuple[Visibility, ...] = ("model", "app")
URI_LIMIT = 2048


@dataclass(frozen=True, slots=True)
class AppUi:
    """A tool's interface: its `ui://` resource, and who may call the tool."""

    resource_uri: str
    visibility: tuple[Visibility, ...] = VISIBILITIES

    @property
    def for_model(self) -> bool:
        return "model" in self.visibility

    @property
    def for_app(self) -> bool:
        return "app" in self.visibility


def declared() -> ClientExtension:
    """What a session advertises (`capabilities.extensions`): Glassbox renders app resources."""
    return advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


def app_ui(tool: types.Tool) -> AppUi | None:
    """The tool's interface as its `_meta.ui` declares it, or None (none, or malformed)."""
    ui = (tool.meta or {}).get("ui")
    if not isinstance(ui, dict):
        return None
    uri = ui.get("resourceUri")
    if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) > URI_LIMIT:
        return None
    return AppUi(uri, _visibility(ui.get("visibility")))


def _visibility(given: Any) -> tuple[Visibility, ...]:
    """As the spec says, both when absent. A list naming nothing known is read as absent: a
    server that got the field wrong keeps its tool offered to the model."""
    if not isinstance(given, list):
        return VISIBILITIES
    known = tuple(v for v in VISIBILITIES if v in given)
    return known or VISIBILITIES


def offered_to_model(tool: types.Tool) -> bool:
    """A tool only its app may call (`visibility: ["app"]`) is never offered to the model."""
    ui = app_ui(tool)
    return ui is None or ui.for_model
