"""Each user's OAuth grants at MCP servers, as the `mcp` SDK's OAuth client stores and reads
them (its TokenStorage), encrypted; the authorizations turns wait for; and the record of
every grant, refresh, refusal and disconnection. No token leaves this module in clear except
to the SDK's client, which sends it to its own server."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from django.db import transaction
from django.utils import timezone

from chat.agent.mcp.config import ServerSpec
from chat.servers.models import McpGrant, McpGrantRecord
from chat.servers.secrets import Unreadable, seal, unseal

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

logger = logging.getLogger("glassbox.mcp")

Action = McpGrantRecord.Action


class GrantStorage:
    """One user's tokens and client registration at one server (the SDK's TokenStorage).
    The SDK calls `set_tokens` after an authorization (a grant) and after a refresh; which
    one it was is known here from the consent that came before."""

    def __init__(self, user_id: int, spec: ServerSpec) -> None:
        self.user_id = user_id
        self.spec = spec
        # Set when an answered consent's code is handed to the SDK: its tokens are a grant.
        self.granting = False

    async def get_tokens(self) -> OAuthToken | None:
        # The SDK loads with the first server a turn connects to (chat.agent.mcp), not with
        # the account pages that import this module.
        from mcp.shared.auth import OAuthToken

        row = await self._row()
        if row is None or not row.tokens:
            return None
        try:
            return OAuthToken.model_validate_json(unseal(row.tokens))
        except Unreadable:
            logger.warning("MCP server %s: a stored grant cannot be read", self.spec.name)
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        action = Action.GRANTED if self.granting else Action.REFRESHED
        self.granting = False
        await database_sync_to_async(_store_tokens)(self.user_id, self.spec.name, tokens, action)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        row = await self._row()
        if row is None or not row.client:
            return None
        try:
            return OAuthClientInformationFull.model_validate_json(unseal(row.client))
        except Unreadable:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        sealed = seal(client_info.model_dump_json(exclude_none=True))
        await McpGrant.objects.aupdate_or_create(
            user_id=self.user_id, server=self.spec.name, defaults={"client": sealed}
        )

    async def _row(self) -> McpGrant | None:
        return await McpGrant.objects.filter(user_id=self.user_id, server=self.spec.name).afirst()


def _store_tokens(user_id: int, server: str, tokens: OAuthToken, action: str) -> None:
    now = timezone.now()
    scopes = tokens.scope or ""
    moments = {"connected_at": now} if action == Action.GRANTED else {"refreshed_at": now}
    with transaction.atomic():
        McpGrant.objects.update_or_create(
            user_id=user_id,
            server=server,
            defaults={"tokens": seal(tokens.model_dump_json()), "scopes": scopes, **moments},
        )
        McpGrantRecord.objects.create(user_id=user_id, server=server, action=action, scopes=scopes)


def connected(user_id: int) -> list[McpGrant]:
    """The servers this user is connected to (a grant with tokens), by name."""
    return list(McpGrant.objects.filter(user_id=user_id).exclude(tokens=""))


def disconnect(*, user_id: int, server: str, detail: str = "") -> bool:
    """Forgets the user's grant at this server (its tokens and registration); the next turn
    that needs the server asks again. False if there was none."""
    with transaction.atomic():
        grant = McpGrant.objects.filter(user_id=user_id, server=server).exclude(tokens="").first()
        if grant is None:
            return False
        grant.delete()
        McpGrantRecord.objects.create(
            user_id=user_id,
            server=server,
            action=Action.DISCONNECTED,
            scopes=grant.scopes,
            detail=detail,
        )
    return True
