"""What a turn offers the servers its user connects to with their own grant
(chat.agent.mcp.oauth), without loading the SDK: the runner builds one for every turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mcp.client.auth import AuthorizationCodeResult, TokenStorage

    from chat.agent.mcp.client_metadata import OAuthClient
    from chat.agent.mcp.config import ServerSpec


class NotConnected(Exception):
    """The user did not grant access (denied it, or did not answer in time), or no turn was
    there to ask them. The message is for people."""


class Asker(Protocol):
    """What one turn offers the servers its user connects to (chat.servers.asking)."""

    @property
    def user_id(self) -> int: ...
    @property
    def wait_seconds(self) -> float: ...
    @property
    def client(self) -> OAuthClient:
        """This site as the servers' authorization servers know it."""

    def storage(self, spec: ServerSpec) -> TokenStorage: ...

    async def ask(self, spec: ServerSpec, authorization_url: str) -> None:
        """Shows the user where to grant access (the turn's 🔑 line)."""

    async def answer(self, spec: ServerSpec, authorization_url: str) -> AuthorizationCodeResult:
        """Waits for the authorization server's answer; raises NotConnected."""

    async def settled(self, spec: ServerSpec, connected: bool, reason: str) -> None:
        """After it asked: whether the session opened with the grant."""
