"""MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) on the client side: the extension
Glassbox declares when it opens a session, and what a tool's `_meta.ui` says about it (the
`ui://` resource that is its interface, and who may call it: the model, the app, or both).

The server wrote `_meta`: it is untrusted. A tool whose `_meta.ui` is malformed is an ordinary
tool without an app, offered to the model as before; it is never hidden by a typo."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
from django.utils.translation import gettext as _
from mcp.client.extension import ClientExtension, advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from activity.recording.events import APP_CSP_KEYS, AppView

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


# An app's HTML is kept with the record of every call that showed it: bounded. An app is one
# document with its scripts inlined (ext-apps' own App class alone is about 530 KB).
HTML_LIMIT = 1024 * 1024
# Domains per CSP directive an app may declare; more are left out.
DOMAINS_PER_KEY = 16
# An https origin, or a wildcard over one's subdomains: no path, no query, no quotes.
ORIGIN = re.compile(r"https://(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:[0-9]{1,5})?")


class NoApp(Exception):
    """The tool's interface could not be read or is not one Glassbox shows; in words."""


def declared_csp(meta: Any) -> dict[str, tuple[str, ...]]:
    """The domains a resource's `_meta.ui.csp` declares, as the frame's policy may name them:
    https origins only (the frame's own policy forbids the rest), at most DOMAINS_PER_KEY per
    directive. Whatever else it says is left out."""
    ui = meta.get("ui") if isinstance(meta, dict) else None
    csp = ui.get("csp") if isinstance(ui, dict) else None
    if not isinstance(csp, dict):
        return {}
    kept = {}
    for key in APP_CSP_KEYS:
        given = csp.get(key)
        if not isinstance(given, list):
            continue
        origins = [
            item.lower().rstrip("/")
            for item in given
            if isinstance(item, str) and ORIGIN.fullmatch(item.lower().rstrip("/"))
        ]
        if origins:
            kept[key] = tuple(dict.fromkeys(origins))[:DOMAINS_PER_KEY]
    return kept


def app_view(uri: str, read: types.ReadResourceResult) -> AppView:
    """The snapshot of an app's resource as `resources/read` returned it (call_id, tool and
    server are the caller's to set), or NoApp saying why it cannot be shown."""
    contents = [item for item in read.contents if item.uri == uri]
    if not contents:
        raise NoApp(_("its server returned no interface at %(uri)s") % {"uri": uri[:200]})
    content = contents[0]
    if not isinstance(content, types.TextResourceContents):
        raise NoApp(_("its interface is not text"))
    if (content.mime_type or "").replace(" ", "") != APP_MIME_TYPE:
        raise NoApp(_("its interface is not an app (%(type)s)") % {"type": content.mime_type})
    # As a database keeps it (no NUL, no lone surrogate), so the hash is that of the record.
    html = content.text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if len(html) > HTML_LIMIT:
        raise NoApp(
            _("its interface is over %(limit)d KB and is not shown")
            % {"limit": HTML_LIMIT // 1024}
        )
    digest = hashlib.sha256(html.encode("utf-8", "surrogatepass")).hexdigest()
    return AppView(call_id="", uri=uri, sha256=digest, html=html, csp=declared_csp(content.meta))
