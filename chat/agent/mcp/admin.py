"""The admin page of MCP servers. Header and environment values are secrets: the form shows
their names with the value masked, keeps a masked value as it was, and never puts a value in
a page, a message or an error."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path

from chat.agent.mcp.config import (
    ServerConfigError,
    ServerSpec,
    declared_servers,
    spec_from_mapping,
)
from chat.models import McpServer

MASK = "••••••"

if TYPE_CHECKING:
    from chat.agent.mcp.connections import Health


def secret_lines(values: dict[str, str]) -> str:
    return "\n".join(f"{name}: {MASK}" for name in values)


def parse_secrets(text: str, kept: dict[str, str]) -> dict[str, str]:
    """`Name: value` lines; a masked value keeps the stored one."""
    parsed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not name:
            raise forms.ValidationError(f"line {number}: write it as Name: value")
        if value == MASK:
            if name not in kept:
                raise forms.ValidationError(f"line {number}: {name} has no stored value to keep")
            value = kept[name]
        parsed[name] = value
    return parsed


def names(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class McpServerForm(forms.ModelForm):
    headers_text = forms.CharField(
        label="Headers",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off", "spellcheck": "false"}),
        help_text=f"For HTTP: one 'Name: value' per line. Stored values show as {MASK}; leave "
        "them to keep them.",
    )
    args_text = forms.CharField(
        label="Arguments",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="For stdio: one argument per line.",
    )
    env_text = forms.CharField(
        label="Environment",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off", "spellcheck": "false"}),
        help_text=f"For stdio: one 'NAME: value' per line. Stored values show as {MASK}.",
    )
    tools_text = forms.CharField(
        label="Allowed tools",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="The tools the agent may use, one per line (the server's own names); "
        "empty for all of them.",
    )
    approval_text = forms.CharField(
        label="Tools that need approval",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line: the user is asked before each call of these. Empty: the "
        "tools the server marks as destructive (and not read-only).",
    )

    class Meta:
        model = McpServer
        fields = ["name", "transport", "url", "command", "enabled"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        row = self.instance
        self.initial.update(
            {
                "headers_text": secret_lines(row.headers or {}),
                "env_text": secret_lines(row.env or {}),
                "args_text": "\n".join(row.args or []),
                "tools_text": "\n".join(row.tools or []),
                "approval_text": "\n".join(row.approval or []),
            }
        )

    def clean(self):
        super().clean()
        data = self.cleaned_data
        row = self.instance
        for field, stored in (("headers", row.headers), ("env", row.env)):
            try:
                data[field] = parse_secrets(data.get(f"{field}_text", ""), stored or {})
            except forms.ValidationError as exc:
                raise forms.ValidationError({f"{field}_text": exc.messages}) from None
        data["args"] = names(data.get("args_text", ""))
        data["tools"] = names(data.get("tools_text", "")) or None
        data["approval"] = names(data.get("approval_text", "")) or None
        http = data.get("transport") == McpServer.Transport.HTTP
        mapping = {
            "name": data.get("name", ""),
            **({"approval": data["approval"]} if data["approval"] is not None else {}),
            **({"tools": data["tools"]} if data["tools"] is not None else {}),
            **(
                {"url": data.get("url", ""), "headers": data["headers"]}
                if http
                else {"command": data.get("command", ""), "args": data["args"], "env": data["env"]}
            ),
        }
        try:
            spec_from_mapping(mapping)
        except ServerConfigError as exc:
            raise forms.ValidationError(str(exc)) from None
        if data.get("name") in {spec.name for spec in declared_servers()}:
            raise forms.ValidationError(
                {"name": "GLASSBOX_MCP_SERVERS already declares a server of this name."}
            )
        return data

    def save(self, commit: bool = True):
        row = super().save(commit=False)
        data = self.cleaned_data
        http = row.transport == McpServer.Transport.HTTP
        row.headers = data["headers"] if http else {}
        row.env = {} if http else data["env"]
        row.args = [] if http else data["args"]
        row.tools, row.approval = data["tools"], data["approval"]
        if commit:
            row.save()
        return row


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    form = McpServerForm
    list_display = ["name", "transport", "where", "enabled", "allowed", "updated_at"]
    list_filter = ["transport", "enabled"]
    search_fields = ["name", "url", "command"]
    fieldsets = [
        (None, {"fields": ["name", "transport", "enabled"]}),
        ("Streamable HTTP", {"fields": ["url", "headers_text"]}),
        ("stdio", {"fields": ["command", "args_text", "env_text"]}),
        ("Tools", {"fields": ["tools_text", "approval_text"]}),
    ]

    def get_urls(self):
        view = self.admin_site.admin_view(self.health_view)
        return [path("health/", view, name="chat_mcpserver_health"), *super().get_urls()]

    def health_view(self, request):
        """Every server, from the setting and from here, as this process sees it now."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return TemplateResponse(
            request,
            "admin/chat/mcpserver/health.html",
            {**self.admin_site.each_context(request), "title": "MCP server health",
             "servers": server_health()},
        )  # fmt: skip

    @admin.display(description="address")
    def where(self, row):
        return row.url if row.transport == McpServer.Transport.HTTP else row.command

    @admin.display(description="allowed tools")
    def allowed(self, row):
        return ", ".join(row.tools) if row.tools is not None else "all"


@dataclass(frozen=True, slots=True)
class ServerRow:
    name: str
    source: str
    transport: str
    address: str
    enabled: bool
    problem: str
    health: Health | None


def server_health() -> list[ServerRow]:
    """The servers of GLASSBOX_MCP_SERVERS, then the admin's (one of the same name is hidden
    by the setting), with what this process knows of their sessions."""
    rows: list[ServerRow] = []
    for spec in declared_servers():
        rows.append(_row(spec, "GLASSBOX_MCP_SERVERS"))
    declared = {row.name for row in rows}
    for server in McpServer.objects.order_by("name"):
        if server.name in declared:
            continue
        try:
            rows.append(_row(spec_from_mapping(server.as_mapping()), "admin"))
        except ServerConfigError as exc:
            rows.append(ServerRow(server.name, "admin", "", "", server.enabled, str(exc), None))
    # Here, not at the top: the admin loads in every process, the MCP SDK only with a server.
    from chat.agent.mcp.connections import health

    known = health(row.name for row in rows if row.enabled and not row.problem)
    return [replace(row, health=known.get(row.name)) for row in rows]


def _row(spec: ServerSpec, source: str) -> ServerRow:
    address = spec.url or " ".join([spec.command, *spec.args])
    return ServerRow(spec.name, source, spec.transport, address, spec.enabled, "", None)
