"""A turn asking its user to connect an MCP server: the 🔑 line "Connect to <server>" with
the scopes asked (its link opens the authorization in a new tab), the wait for the answer
(woken by the callback in whichever process receives it), and the line's outcome. The turn
goes on either way: without the server's tools when the user refuses or does not answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from activity.recording.events import CONNECT, Status, StatusState
from chat.agent.mcp.asker import NotConnected
from chat.agent.mcp.config import ServerSpec
from chat.servers.consents import consent_expired, consent_group, consent_open
from chat.servers.models import McpConsent, McpGrantRecord
from chat.servers.oauth_client import deployment_client
from chat.servers.secrets import unseal

if TYPE_CHECKING:
    from mcp.client.auth import AuthorizationCodeResult

    from chat.servers.grants import GrantStorage

ICON = "🔑"
# A lost wake-up (the channel layer dropped it) costs at most this long: the row is read again.
REREAD_SECONDS = 5.0
REFUSALS = {
    "access_denied": gettext_lazy("you declined"),
    "timed_out": gettext_lazy("no answer in time"),
}


def connect_line(server: str, state: StatusState, message: str) -> Status:
    return Status(
        icon=ICON, message=message, state=state, tool=CONNECT, call_id=f"connect-{server}"
    )


class ConnectAsker:
    """What one turn offers chat.agent.mcp.oauth: its user, their stored grants, and its feed
    to ask them in."""

    def __init__(self, user_id: int, announce: Callable[[Status], Awaitable[None]]) -> None:
        self.user_id = user_id
        self._announce = announce
        # The session's own task may ask (a refresh refused, a step-up mid-call): its lines
        # speak the turn's language, and stop once the turn has ended.
        self.language = translation.get_language()
        self.closed = False
        self.wait_seconds = settings.GLASSBOX_OAUTH_CONSENT_TIMEOUT
        self.client = deployment_client()
        self._storages: dict[str, GrantStorage] = {}
        self._consents: dict[str, McpConsent] = {}

    def close(self) -> None:
        """The turn ended: nothing more is written to its feed."""
        self.closed = True

    async def announce(self, line: Status) -> None:
        if not self.closed:
            await self._announce(line)

    def storage(self, spec: ServerSpec) -> GrantStorage:
        # The SDK loads with the first server a turn connects to (chat.agent.mcp).
        from chat.servers.grants import GrantStorage

        if spec.name not in self._storages:
            self._storages[spec.name] = GrantStorage(self.user_id, spec)
        return self._storages[spec.name]

    async def ask(self, spec: ServerSpec, authorization_url: str) -> None:
        with translation.override(self.language):
            await self._ask(spec, authorization_url)

    async def _ask(self, spec: ServerSpec, authorization_url: str) -> None:
        consent = await consent_open(
            user_id=self.user_id, server=spec.name, authorization_url=authorization_url
        )
        self._consents[spec.name] = consent
        scopes = ", ".join(consent.scopes.split())
        if scopes:
            message = _("Connect to %(server)s — it asks for: %(scopes)s") % {
                "server": spec.name,
                "scopes": scopes,
            }
        else:
            message = _("Connect to %(server)s") % {"server": spec.name}
        await self.announce(connect_line(spec.name, "in_progress", message))

    async def answer(self, spec: ServerSpec, authorization_url: str) -> AuthorizationCodeResult:
        with translation.override(self.language):
            return await self._answer(spec, authorization_url)

    async def _answer(self, spec: ServerSpec, authorization_url: str) -> AuthorizationCodeResult:
        from mcp.client.auth import AuthorizationCodeResult

        consent = await _answered(self._consents[spec.name])
        self._consents[spec.name] = consent
        if consent.error:
            reason = str(REFUSALS.get(consent.error, _("the authorization server refused")))
            await self.announce(
                connect_line(
                    spec.name,
                    "failed",
                    _("Not connected to %(server)s: %(reason)s")
                    % {"server": spec.name, "reason": reason},
                )
            )
            raise NotConnected(reason)
        self.storage(spec).granting = True
        # Said now, also for an authorization asked mid-call (a step-up): the session's
        # own outcome only corrects it if the grant then fails (`settled`).
        connected = _("Connected to %(server)s") % {"server": spec.name}
        await self.announce(connect_line(spec.name, "done", connected))
        state = _query(authorization_url, "state")
        return AuthorizationCodeResult(
            code=unseal(consent.code), state=state, iss=consent.iss or None
        )

    async def settled(self, spec: ServerSpec, connected: bool, reason: str) -> None:
        with translation.override(self.language):
            await self._settled(spec, connected, reason)

    async def _settled(self, spec: ServerSpec, connected: bool, reason: str) -> None:
        consent = self._consents.pop(spec.name, None)
        if connected:
            return
        if consent is not None and consent.code and not consent.error:
            # The user granted it, and the grant did not work (a token exchange refused, an
            # answer from another issuer): recorded with the refusals.
            await McpGrantRecord.objects.acreate(
                user_id=self.user_id,
                server=spec.name,
                action=McpGrantRecord.Action.REFUSED,
                scopes=consent.scopes,
                detail=reason[:200],
            )
            await self.announce(
                connect_line(
                    spec.name,
                    "failed",
                    _("Not connected to %(server)s: %(reason)s")
                    % {"server": spec.name, "reason": reason},
                )
            )


def _query(url: str, name: str) -> str:
    return parse_qs(urlsplit(url).query).get(name, [""])[0]


async def _answered(consent: McpConsent) -> McpConsent:
    """The consent once answered; NotConnected when its deadline passes first (then it is
    recorded as refused)."""
    layer = get_channel_layer()
    channel = await layer.new_channel() if layer is not None else None
    group = consent_group(consent.state_hash)
    if layer is not None and channel is not None:
        await layer.group_add(group, channel)
    try:
        while True:
            # Read after joining the group: an answer that came before is seen here.
            row = await McpConsent.objects.aget(pk=consent.pk)
            if row.answered_at is not None:
                return row
            remaining = (row.deadline - timezone.now()).total_seconds()
            if remaining <= 0:
                # Read once more: expired now, or answered just before.
                await database_sync_to_async(consent_expired)(row.pk)
                continue
            with suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, REREAD_SECONDS)):
                    if layer is not None and channel is not None:
                        await layer.receive(channel)
                    else:
                        await asyncio.sleep(REREAD_SECONDS)
    finally:
        if layer is not None and channel is not None:
            with suppress(Exception):
                await layer.group_discard(group, channel)
