"""The admin page of MCP servers. Header and environment values are secrets: the form shows
their names with the value masked, keeps a masked value as it was, and never puts a value in
a page, a message or an error. Stdio servers (programs this machine runs) are a superuser's:
other admins see them read-only and manage HTTP servers (chat.servers.changes). Every
change is recorded with who made it, on the page *MCP server changes*. Users' grants at the
servers are shown read-only, never a token."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.template.response import TemplateResponse
from django.urls import path

from chat.agent.mcp import machine_auth
from chat.agent.mcp.config import (
    ServerConfigError,
    ServerSpec,
    spec_from_mapping,
)
from chat.servers.changes import (
    MASK,
    RUNS_PROGRAMS,
    may_change,
    may_run_programs,
    server_save,
    servers_delete,
)
from chat.servers.configured import settings_servers
from chat.servers.models import McpGrant, McpGrantRecord, McpServer, McpServerChange
from chat.servers.sightings import sightings
from project.read_only_admin import RecordAdmin

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


METHODS = [
    ("", "none"),
    ("client_secret_basic", "client secret, HTTP Basic (client_secret_basic)"),
    ("client_secret_post", "client secret, in the form (client_secret_post)"),
    ("private_key_jwt", "private key, signed assertion (private_key_jwt)"),
]
# The client-credentials fields of the form, each the declaration's key of the same name
# (the variable or file becomes the secret's or the key's, as the method says).
CREDENTIALS = {
    "credentials_client_id": "client_id",
    "credentials_method": "method",
    "credentials_env": "env",
    "credentials_file": "file",
    "credentials_signing_algorithm": "signing_algorithm",
    "credentials_scope": "scope",
    "credentials_issuer": "issuer",
}


def credentials_initial(grant: dict[str, str]) -> dict[str, str]:
    """The form's fields for a stored declaration (which holds names, never a secret)."""
    values = {
        **grant,
        "env": grant.get("client_secret_env") or grant.get("private_key_env", ""),
        "file": grant.get("client_secret_file") or grant.get("private_key_file", ""),
    }
    return {field: values.get(key, "") for field, key in CREDENTIALS.items()}


def credentials_declared(data: dict) -> dict[str, str]:
    """The declaration's `client_credentials` from the form's fields ({} when all are empty);
    raises a ValidationError naming the field for what the form itself can tell."""
    given = {key: (data.get(field) or "").strip() for field, key in CREDENTIALS.items()}
    if not any(given.values()):
        return {}
    errors = {}
    if not given["client_id"]:
        errors["credentials_client_id"] = "Give the client id Glassbox is registered as."
    if not given["method"]:
        errors["credentials_method"] = "Choose how Glassbox proves it is this client."
    if given["env"] and given["file"]:
        errors["credentials_env"] = "Name an environment variable or a file, not both."
    elif not given["env"] and not given["file"]:
        errors["credentials_env"] = (
            "Name the environment variable (or the file) that holds the client secret or "
            "private key: the secret itself is never entered here."
        )
    if errors:
        raise forms.ValidationError(errors)
    kind = "private_key" if given["method"] == machine_auth.JWT_METHOD else "client_secret"
    place = f"{kind}_env" if given["env"] else f"{kind}_file"
    grant = {"client_id": given["client_id"], "method": given["method"]}
    grant[place] = given["env"] or given["file"]
    for key in ("signing_algorithm", "scope", "issuer"):
        if given[key]:
            grant[key] = given[key]
    return grant


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
    credentials_client_id = forms.CharField(
        label="Client id",
        required=False,
        max_length=200,
        help_text="For a server Glassbox itself is authorized for (OAuth client "
        "credentials): the client id it is registered as.",
    )
    credentials_method = forms.ChoiceField(
        label="Authentication method", required=False, choices=METHODS
    )
    credentials_env = forms.CharField(
        label="Secret or key from the environment variable",
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text="The name of the variable that holds the client secret (or the PEM private "
        "key), in every server process's environment. Never the secret itself.",
    )
    credentials_file = forms.CharField(
        label="Secret or key from the file",
        required=False,
        max_length=400,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text="Or the path of the file that holds it, on every server process's machine.",
    )
    credentials_signing_algorithm = forms.ChoiceField(
        label="Signing algorithm",
        required=False,
        choices=[("", "RS256 (the default)"), *((a, a) for a in machine_auth.ALGORITHMS)],
        help_text="For a private key only.",
    )
    credentials_scope = forms.CharField(label="Scope", required=False, max_length=400)
    credentials_issuer = forms.CharField(
        label="Issuer",
        required=False,
        max_length=400,
        help_text="The authorization server's issuer URL: the credentials go to no other.",
    )

    # Whether the admin using the form may declare a program to run (a stdio server); the
    # admin makes a form per request that says so. Refused unless said.
    may_run_programs = False

    class Meta:
        model = McpServer
        fields = ["name", "transport", "url", "command", "enabled", "sampling"]

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
                **credentials_initial(row.client_credentials or {}),
            }
        )
        if not self.may_run_programs and "transport" in self.fields:
            self.fields["transport"].help_text = "stdio is for superusers only."

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
        if not http and not self.may_run_programs:
            raise forms.ValidationError({"transport": RUNS_PROGRAMS})
        data["client_credentials"] = credentials_declared(data)
        mapping = {
            "name": data.get("name", ""),
            **({"approval": data["approval"]} if data["approval"] is not None else {}),
            **({"tools": data["tools"]} if data["tools"] is not None else {}),
            **({"sampling": True} if data.get("sampling") else {}),
            **(
                {"url": data.get("url", ""), "headers": data["headers"]}
                if http
                else {"command": data.get("command", ""), "args": data["args"], "env": data["env"]}
            ),
        }
        if data["client_credentials"]:
            mapping["client_credentials"] = data["client_credentials"]
        try:
            spec_from_mapping(mapping)
        except ServerConfigError as exc:
            # What is wrong with the credentials (a variable not set, a file not readable,
            # an issuer that is not a URL) goes beside them.
            problem = str(exc)
            if "'client_credentials'" in problem:
                raise forms.ValidationError({"credentials_env": problem}) from None
            raise forms.ValidationError(problem) from None
        if data.get("name") in {spec.name for spec in settings_servers()}:
            raise forms.ValidationError(
                {"name": "GLASSBOX_MCP_SERVERS already declares a server of this name."}
            )
        return data

    def save(self, commit: bool = True):
        row = super().save(commit=False)
        data = self.cleaned_data
        http = row.transport == McpServer.Transport.HTTP
        row.headers = data["headers"] if http else {}
        row.command = "" if http else row.command  # an HTTP server runs no program
        row.env = {} if http else data["env"]
        row.args = [] if http else data["args"]
        row.tools, row.approval = data["tools"], data["approval"]
        row.client_credentials = data["client_credentials"] if http else {}
        if commit:
            row.save()
        return row


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    form = McpServerForm
    list_display = ["name", "transport", "where", "enabled", "allowed", "sampling", "updated_at"]
    list_filter = ["transport", "enabled", "sampling"]
    search_fields = ["name", "url", "command"]
    fieldsets = [
        (None, {"fields": ["name", "transport", "enabled"]}),
        ("Streamable HTTP", {"fields": ["url", "headers_text"]}),
        ("stdio", {"fields": ["command", "args_text", "env_text"]}),
        (
            "Client credentials (Glassbox's own OAuth client, for streamable HTTP)",
            {
                "fields": list(CREDENTIALS),
                "description": "Only the name of the environment variable or the file that "
                "holds the secret or key is entered and stored here, never the secret.",
            },
        ),
        ("Tools", {"fields": ["tools_text", "approval_text"]}),
        ("Sampling", {"fields": ["sampling"]}),
    ]

    actions = ["enable_servers", "disable_servers"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"may_run_programs": may_run_programs(request.user)})

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (
            obj is None or may_change(request.user, obj)
        )

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (
            obj is None or may_change(request.user, obj)
        )

    def save_model(self, request, obj, form, change):
        server_save(server=obj, by=request.user)

    def delete_model(self, request, obj):
        servers_delete(servers=[obj], by=request.user)

    def delete_queryset(self, request, queryset):
        servers_delete(servers=queryset, by=request.user)

    @admin.action(description="Enable selected MCP servers", permissions=["change"])
    def enable_servers(self, request, queryset):
        self._set_enabled(request, queryset, enabled=True)

    @admin.action(description="Disable selected MCP servers", permissions=["change"])
    def disable_servers(self, request, queryset):
        self._set_enabled(request, queryset, enabled=False)

    def _set_enabled(self, request, queryset, *, enabled: bool) -> None:
        servers = list(queryset)
        refused = [server.name for server in servers if not may_change(request.user, server)]
        if refused:
            names = ", ".join(refused)
            self.message_user(request, f"{RUNS_PROGRAMS} Nothing was changed ({names}).",
                              messages.ERROR)  # fmt: skip
            return
        with transaction.atomic():
            for server in servers:
                server.enabled = enabled
                server_save(server=server, by=request.user)
        done = "Enabled" if enabled else "Disabled"
        self.message_user(request, f"{done}: {', '.join(s.name for s in servers)}.")

    def get_urls(self):
        view = self.admin_site.admin_view(self.health_view)
        return [path("health/", view, name="servers_mcpserver_health"), *super().get_urls()]

    def health_view(self, request):
        """Every server, from the setting and from here, as this process sees it now."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return TemplateResponse(
            request,
            "admin/servers/mcpserver/health.html",
            {**self.admin_site.each_context(request), "title": "MCP server health",
             "servers": server_health(), "sightings": sightings()},
        )  # fmt: skip

    # What a read-only page shows (a stdio server, to an admin who is not a superuser).
    @admin.display(description="Headers")
    def headers_text(self, row):
        return secret_lines(row.headers or {})

    @admin.display(description="Arguments")
    def args_text(self, row):
        return "\n".join(row.args or [])

    @admin.display(description="Environment")
    def env_text(self, row):
        return secret_lines(row.env or {})

    @admin.display(description="Allowed tools")
    def tools_text(self, row):
        return "\n".join(row.tools) if row.tools is not None else "all"

    @admin.display(description="Tools that need approval")
    def approval_text(self, row):
        return "\n".join(row.approval) if row.approval is not None else "the destructive ones"

    @admin.display(description="address")
    def where(self, row):
        return row.url if row.transport == McpServer.Transport.HTTP else row.command

    @admin.display(description="allowed tools")
    def allowed(self, row):
        return ", ".join(row.tools) if row.tools is not None else "all"


def _credentials_shown(field: str, label: str):
    """What a read-only page shows of a client-credentials field: the stored name."""

    @admin.display(description=label)
    def shown(self, row):
        return credentials_initial(row.client_credentials or {})[field]

    return shown


for _field in CREDENTIALS:
    setattr(
        McpServerAdmin,
        _field,
        _credentials_shown(_field, str(McpServerForm.base_fields[_field].label)),
    )


@admin.register(McpServerChange)
class McpServerChangeAdmin(RecordAdmin):
    """Who added, changed, enabled, disabled or deleted which MCP server, and when: for
    whoever may see the servers. Nobody adds, edits or deletes a record here."""

    list_display = ["at", "by", "server", "action", "changed_fields"]
    list_filter = ["action", "at"]
    list_select_related = ["by"]
    search_fields = ["server", "by__username"]
    date_hierarchy = "at"
    fields = ("at", "by", "server", "action", "changed_fields", "declaration")
    readonly_fields = fields

    @admin.display(description="changed")
    def changed_fields(self, change):
        return ", ".join(change.fields) or "—"

    def has_view_permission(self, request, obj=None):
        user = request.user
        return super().has_view_permission(request, obj) or any(
            user.has_perm(f"servers.{verb}_mcpserver") for verb in ("view", "change")
        )


# Users' grants at MCP servers, read-only: who is connected to which server with which
# scopes, and the record of every grant, refresh, refusal and disconnection. No token is ever
# shown (the encrypted columns are not even listed).
@admin.register(McpGrant)
class McpGrantAdmin(RecordAdmin):
    list_display = ["user", "server", "scopes", "connected_at", "refreshed_at"]
    list_filter = ["server"]
    list_select_related = ["user"]
    search_fields = ["server", "user__username"]
    fields = ("user", "server", "scopes", "connected_at", "refreshed_at")
    readonly_fields = fields


@admin.register(McpGrantRecord)
class McpGrantRecordAdmin(RecordAdmin):
    list_display = ["at", "user", "server", "action", "scopes", "detail"]
    list_filter = ["action", "server", "at"]
    list_select_related = ["user"]
    search_fields = ["server", "user__username"]
    date_hierarchy = "at"
    fields = ("at", "user", "server", "action", "scopes", "detail")
    readonly_fields = fields


@dataclass(frozen=True, slots=True)
class ServerRow:
    name: str
    source: str
    transport: str
    address: str
    enabled: bool
    problem: str
    health: Health | None
    # Which credentials it connects with, by name (never a value); "" for none.
    credentials: str = ""


def server_health() -> list[ServerRow]:
    """The servers of GLASSBOX_MCP_SERVERS, then the admin's (one of the same name is hidden
    by the setting), with what this process knows of their sessions."""
    rows: list[ServerRow] = []
    for spec in settings_servers():
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
    grant = spec.client_credentials
    credentials = f"client credentials: {machine_auth.described(grant)}" if grant else ""
    if spec.oauth:
        credentials = "each user's own OAuth grant"
    return ServerRow(
        spec.name, source, spec.transport, address, spec.enabled, "", None, credentials
    )
