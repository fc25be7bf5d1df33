"""What an MCP server is to Glassbox: a name, how to reach it, and which of its tools the
agent may use. Servers come from GLASSBOX_MCP_SERVERS and from the admin; both end here."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from chat.agent.mcp import machine_auth

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,23}$")
# Tool names reach the model as `<server>__<tool>`, within the 64 characters it accepts.
SEPARATOR = "__"
KEYS = {
    "name", "url", "transport", "headers", "command", "args", "env", "tools", "approval",
    "enabled", "auth", "oauth_client", "client_credentials", "sampling",
}  # fmt: skip
# What an admin may enter for a server's OAuth client, when the server offers no registration.
OAUTH_CLIENT_KEYS = {"client_id", "client_secret", "scope"}
# How an HTTP server is spoken to: streamable HTTP, or the legacy SSE transport (the 2024
# protocol's `/sse` endpoint), which a URL ending in /sse picks unless `transport` says.
HTTP_TRANSPORTS = ("streamable-http", "sse")


class ServerConfigError(ValueError):
    """A server declaration that cannot be used; the message names the field."""


@dataclass(frozen=True)
class ServerSpec:
    name: str
    url: str = ""
    # Secrets: never logged, shown back in admin, or put in an error message.
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, repr=False)
    # None: every tool the server lists.
    tools: frozenset[str] | None = None
    # None: the tools annotated destructive (and not read-only) ask for approval.
    approval: frozenset[str] | None = None
    enabled: bool = True
    # An HTTP server on the legacy SSE transport.
    sse: bool = False
    # Each user connects with their own OAuth grant (chat.agent.mcp.oauth).
    oauth: bool = False
    # A client an admin registered with the server's authorization server; a secret.
    oauth_client: dict[str, str] = field(default_factory=dict, repr=False)
    # Glassbox's own OAuth client credentials (chat.agent.mcp.machine_auth); a secret.
    client_credentials: dict[str, str] = field(default_factory=dict, repr=False)
    # The server may ask the turn's model to write something (MCP sampling), each request
    # approved by the person whose call it runs (chat.agent.mcp.sampling). Off unless said.
    sampling: bool = False

    @property
    def transport(self) -> str:
        return "sse" if self.sse else "http" if self.url else "stdio"

    @property
    def fingerprint(self) -> str:
        """Changes when anything that needs a new session changes (secrets included, hashed)."""
        data = [self.url, self.sse, self.headers, self.command, list(self.args), self.env]
        if self.oauth:
            data += [self.oauth, self.oauth_client]
        if self.client_credentials:
            data += [self.client_credentials]
        if self.sampling:
            # The capability is declared when a session opens.
            data += ["sampling"]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


def spec_from_mapping(data: Any, where: str = "server") -> ServerSpec:
    if not isinstance(data, dict):
        raise ServerConfigError(f"{where}: expected an object")
    unknown = set(data) - KEYS
    if unknown:
        raise ServerConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise ServerConfigError(
            f"{where}: 'name' must be 1-24 letters, digits, '-' or '_', starting with a letter "
            "or digit"
        )
    where = f"server {name!r}"
    url = _string(data, "url", where)
    command = _string(data, "command", where)
    if bool(url) == bool(command):
        raise ServerConfigError(f"{where}: give either 'url' (HTTP) or 'command' (stdio)")
    if url and not re.match(r"^https?://[^\s/]+", url):
        raise ServerConfigError(f"{where}: 'url' must be an http:// or https:// URL")
    if url and ("args" in data or "env" in data):
        raise ServerConfigError(f"{where}: 'args' and 'env' are for stdio servers")
    if command and "headers" in data:
        raise ServerConfigError(f"{where}: 'headers' are for HTTP servers")
    transport = data.get("transport")
    if transport is not None and (not url or transport not in HTTP_TRANSPORTS):
        raise ServerConfigError(
            f"{where}: 'transport' is for HTTP servers: 'streamable-http' or 'sse'"
        )
    if transport is None:
        transport = "sse" if urlsplit(url).path.rstrip("/").endswith("/sse") else ""
    oauth, oauth_client = _oauth(data, url, transport, where)
    client_credentials = _machine(data, oauth, transport, where)
    tools = data.get("tools")
    approval = data.get("approval")
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ServerConfigError(f"{where}: 'enabled' must be true or false")
    sampling = data.get("sampling", False)
    if not isinstance(sampling, bool):
        raise ServerConfigError(f"{where}: 'sampling' must be true or false")
    return ServerSpec(
        name=name,
        url=url,
        headers=_strings(data, "headers", where),
        command=command,
        args=tuple(_names(data, "args", where)),
        env=_strings(data, "env", where),
        tools=None if tools is None else frozenset(_names(data, "tools", where)),
        approval=None if approval is None else frozenset(_names(data, "approval", where)),
        enabled=enabled,
        sse=transport == "sse",
        oauth=oauth,
        oauth_client=oauth_client,
        client_credentials=client_credentials,
        sampling=sampling,
    )


def _machine(data: dict[str, Any], oauth: bool, transport: str, where: str) -> dict[str, str]:
    if "client_credentials" not in data:
        return {}
    if not data.get("url") or transport == "sse" or oauth:
        raise ServerConfigError(
            f"{where}: 'client_credentials' is for streamable HTTP servers without "
            '"auth": "oauth"'
        )
    try:
        return machine_auth.checked(data["client_credentials"], where)
    except machine_auth.MachineConfigError as exc:
        raise ServerConfigError(str(exc)) from None


def _oauth(data: dict[str, Any], url: str, transport: str, where: str) -> tuple[bool, dict]:
    auth = data.get("auth")
    if auth is not None and auth != "oauth":
        raise ServerConfigError(f"{where}: 'auth' is 'oauth' or absent")
    if auth and (not url or transport == "sse"):
        raise ServerConfigError(f"{where}: 'auth' is for streamable HTTP servers")
    client = _strings(data, "oauth_client", where)
    if client and not auth:
        raise ServerConfigError(f'{where}: \'oauth_client\' needs "auth": "oauth"')
    if client and (set(client) - OAUTH_CLIENT_KEYS or "client_id" not in client):
        raise ServerConfigError(
            f"{where}: 'oauth_client' holds client_id, and client_secret and scope if needed"
        )
    return bool(auth), client


def declared_servers(value: str | Sequence[ServerSpec]) -> list[ServerSpec]:
    """The servers GLASSBOX_MCP_SERVERS declares, as the caller read the setting: its text
    (JSON, or a file's path) read once, or server declarations set directly (as tests do).
    Raises ServerConfigError."""
    if isinstance(value, str):
        return list(_read(value))
    return list(value)


@cache
def _read(value: str) -> tuple[ServerSpec, ...]:
    return tuple(specs_from_setting(value))


def specs_from_setting(value: str) -> list[ServerSpec]:
    """GLASSBOX_MCP_SERVERS: a JSON list, or the path of a file holding one."""
    text = value.strip()
    if not text:
        return []
    if not text.startswith(("[", "{")):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise ServerConfigError(f"cannot read the file {value!r}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ServerConfigError(f"not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise ServerConfigError("expected a JSON list of servers")
    specs = [spec_from_mapping(item, f"server {index + 1}") for index, item in enumerate(data)]
    names = [spec.name for spec in specs]
    for name in names:
        if names.count(name) > 1:
            raise ServerConfigError(f"server {name!r} is declared twice")
    return specs


def _string(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ServerConfigError(f"{where}: {key!r} must be a string")
    return value.strip()


def _strings(data: dict[str, Any], key: str, where: str) -> dict[str, str]:
    value = data.get(key) or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ServerConfigError(f"{where}: {key!r} must be an object of strings")
    return dict(value)


def _names(data: dict[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ServerConfigError(f"{where}: {key!r} must be a list of strings")
    return value
