"""The MCP servers' rows: the servers admins add and the record of their changes, each
user's grants at them and the authorizations turns wait for, and what each server process
sees of them. The tables keep the names they had when these models were chat's
(`db_table`): the move to this app changed no table (migrations/0001)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class McpServer(models.Model):
    """An MCP server whose tools the agent may use, added by an admin (GLASSBOX_MCP_SERVERS
    declares more without admin clicks). Header and environment values are secrets: the admin
    never shows them back."""

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP"
        STDIO = "stdio", "stdio (a command on this machine)"

    name = models.CharField(
        max_length=24,
        unique=True,
        help_text="Letters, digits, '-' and '_'. The agent sees its tools as <name>__<tool>.",
    )
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.HTTP)
    url = models.URLField(blank=True, help_text="For streamable HTTP: the server's MCP URL.")
    headers = models.JSONField(default=dict, blank=True)
    command = models.CharField(max_length=400, blank=True, help_text="For stdio: the program.")
    args = models.JSONField(default=list, blank=True)
    env = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    # None: every tool the server lists.
    tools = models.JSONField(null=True, blank=True)
    # None: the tools the server annotates as destructive (and not read-only) ask first.
    approval = models.JSONField(null=True, blank=True)
    # Glassbox's own OAuth client at an HTTP server (chat.agent.mcp.machine_auth): its id,
    # method, scope, issuer and the *names* of the variable or file holding its secret or
    # key, never a secret.
    client_credentials = models.JSONField(default=dict, blank=True)
    # Off by default: with it on, the server may ask the turn's model to write something
    # (MCP sampling), each request shown to the person whose call it runs, who approves it.
    sampling = models.BooleanField(
        default=False,
        help_text="Let this server ask the model to write something (MCP sampling). Each "
        "request is shown to the user whose tool call it runs, who approves or denies it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "chat_mcpserver"
        ordering = ["name"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.name

    def as_mapping(self) -> dict:
        """The declaration in the form GLASSBOX_MCP_SERVERS takes."""
        data: dict = {"name": self.name, "enabled": self.enabled}
        if self.approval is not None:
            data["approval"] = self.approval
        if self.transport == self.Transport.HTTP:
            data |= {"url": self.url, "headers": self.headers}
            if self.client_credentials:
                data["client_credentials"] = self.client_credentials
        else:
            data |= {"command": self.command, "args": self.args, "env": self.env}
        if self.tools is not None:
            data["tools"] = self.tools
        if self.sampling:
            data["sampling"] = True
        return data


class McpServerChange(models.Model):
    """One change to an MCP server (added, changed, enabled, disabled, deleted): who made it,
    when, which fields changed, and the declaration it left (before a deletion, the one it
    removed) with header and environment values masked. Append-only: nobody edits the record
    of who changed what the agent runs."""

    class Action(models.TextChoices):
        ADDED = "added"
        CHANGED = "changed"
        ENABLED = "enabled"
        DISABLED = "disabled"
        DELETED = "deleted"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    # PROTECT: accounts are erased (renamed), not deleted, so the record keeps who it was.
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    server = models.CharField(max_length=24, help_text="The server's name at the time.")
    action = models.CharField(max_length=8, choices=Action.choices)
    fields = models.JSONField(default=list, blank=True)
    declaration = models.JSONField(default=dict)

    class Meta:
        db_table = "chat_mcpserverchange"
        ordering = ["-at", "-id"]
        verbose_name = "MCP server change"

    def __str__(self) -> str:
        return f"{self.server} {self.action}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("MCP server changes are append-only and cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("MCP server changes are append-only and cannot be deleted.")


class McpGrant(models.Model):
    """What one user granted Glassbox at one MCP server's authorization server: the tokens
    and the client registration, both encrypted (chat.servers.secrets), and the scopes, which
    are shown. The tokens act for this user only."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_grants"
    )
    server = models.CharField(max_length=24)
    # Fernet tokens of the JSON the SDK stores; never shown, logged or exported.
    tokens = models.TextField(blank=True, editable=False)
    client = models.TextField(blank=True, editable=False)
    scopes = models.CharField(max_length=1000, blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "chat_mcpgrant"
        ordering = ["server"]
        constraints = [
            models.UniqueConstraint(fields=["user", "server"], name="one_grant_per_user_server")
        ]

    def __str__(self) -> str:
        return f"{self.server} for user {self.user_id}"


class McpConsent(models.Model):
    """An authorization a turn waits for: the address its user opens, and the answer the
    authorization server sends back (an encrypted one-time code, or an error). Found by the
    hash of its `state`, which only the user's browser and the waiting turn know."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    server = models.CharField(max_length=24)
    state_hash = models.CharField(max_length=64, unique=True)
    authorization_url = models.TextField()
    scopes = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    code = models.TextField(blank=True, editable=False)
    iss = models.CharField(max_length=500, blank=True)
    error = models.CharField(max_length=100, blank=True)

    class Meta:
        db_table = "chat_mcpconsent"
        indexes = [
            models.Index(
                fields=["user", "server", "-created_at"], name="chat_mcpcon_user_id_2774da_idx"
            )
        ]

    def __str__(self) -> str:
        return f"{self.server} for user {self.user_id}"


class McpGrantRecord(models.Model):
    """One change to a user's grant at an MCP server: granted, refreshed, refused (denied at
    the authorization server, or not answered in time), disconnected. Append-only, and never
    holds a token."""

    class Action(models.TextChoices):
        GRANTED = "granted"
        REFRESHED = "refreshed"
        REFUSED = "refused"
        DISCONNECTED = "disconnected"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    # PROTECT: accounts are erased (renamed), not deleted, so the record keeps who it was.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    server = models.CharField(max_length=24)
    action = models.CharField(max_length=12, choices=Action.choices)
    scopes = models.CharField(max_length=1000, blank=True)
    detail = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "chat_mcpgrantrecord"
        ordering = ["-at", "-id"]
        verbose_name = "MCP grant record"

    def __str__(self) -> str:
        return f"{self.server} {self.action}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("MCP grant records are append-only and cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("MCP grant records are append-only and cannot be deleted.")


class McpServerSighting(models.Model):
    """One server process's view of one MCP server, written every few seconds by that
    process (chat.servers.heartbeat): the admin's health page shows every process's, marking
    those that stopped writing, and a process that starts offers the tools listed here while
    its own first session opens."""

    worker = models.CharField(max_length=100, help_text="host:pid of the server process.")
    server = models.CharField(max_length=24)
    state = models.CharField(max_length=12)
    reason = models.CharField(max_length=300, blank=True)
    since = models.DateTimeField(null=True, blank=True)
    sessions = models.PositiveIntegerField(default=0)
    # The tools as the server last listed them (MCP Tool objects), and a keyed hash of the
    # declaration they were listed under: a changed declaration does not reuse them.
    tools = models.JSONField(null=True, blank=True)
    listed_under = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField()
    updated_at = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "chat_mcpserversighting"
        ordering = ["server", "worker"]
        constraints = [
            models.UniqueConstraint(fields=["worker", "server"], name="one_sighting_per_worker")
        ]
        verbose_name = "MCP server sighting"

    def __str__(self) -> str:
        return f"{self.server} from {self.worker}: {self.state}"
