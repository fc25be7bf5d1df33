"""MCP servers that each user connects to with their own OAuth grant ("auth": "oauth").
The `mcp` SDK's OAuth client does the protocol: the protected resource metadata named by the
401's WWW-Authenticate, the authorization server's metadata and its issuer, registration (a
client ID metadata document, dynamic registration, or the client an admin entered), PKCE,
the `resource` parameter, the `iss` of the answer, refresh, and a new authorization on
`403 insufficient_scope`. This module gives it a session per user and server, and a person
to ask: the turn that needs the server shows its user a link and waits for the answer
(handed in as an `Asker`; the agent imports no models)."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from contextlib import suppress

import httpx2
from django.utils.translation import gettext as _
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from chat.agent.mcp.asker import Asker, NotConnected
from chat.agent.mcp.client_metadata import OAuthClient
from chat.agent.mcp.config import ServerSpec
from chat.agent.mcp.connections import Connection
from chat.agent.mcp.limits import DEFAULT_LIMITS, McpLimits

logger = logging.getLogger("glassbox.mcp")


def client_metadata(client: OAuthClient) -> OAuthClientMetadata:
    """What the SDK registers with: this site's one client metadata (client_metadata)."""
    return OAuthClientMetadata.model_validate(client.registration())


class EnteredClient:
    """A user's storage, holding the client an admin entered for the server, if any (then
    nothing registers: the SDK asks the storage first)."""

    def __init__(self, storage: TokenStorage, spec: ServerSpec, client: OAuthClient) -> None:
        self.storage = storage
        self.spec = spec
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return await self.storage.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self.storage.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        entered = self.spec.oauth_client
        if not entered:
            return await self.storage.get_client_info()
        secret = entered.get("client_secret") or None
        return OAuthClientInformationFull(
            client_id=entered["client_id"],
            client_secret=secret,
            # RFC 7591 §2: a client with a secret that says nothing else uses HTTP Basic.
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            redirect_uris=[self.client.redirect_url],  # type: ignore[list-item]
            scope=entered.get("scope") or None,
        )

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if not self.spec.oauth_client:
            await self.storage.set_client_info(client_info)


class UserConnection(Connection):
    """The session of one user with one server, with that user's tokens only."""

    def __init__(self, spec: ServerSpec, asker: Asker, limits: McpLimits) -> None:
        self.user_id = asker.user_id
        # The turn that may ask its user now; None between turns (nobody to ask).
        self.asker: Asker | None = asker
        self.asked = False
        self.refused = False
        self.provider = OAuthClientProvider(
            server_url=spec.url,
            client_metadata=client_metadata(asker.client),
            storage=EnteredClient(asker.storage(spec), spec, asker.client),
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=asker.client.metadata_url,
        )
        self._authorization_url = ""
        super().__init__(spec, limits=limits)

    def _auth(self) -> httpx2.Auth | None:
        return self.provider

    async def _redirect(self, authorization_url: str) -> None:
        asker = self.asker
        if asker is None or self.refused:
            self.refused = True
            raise NotConnected("no turn is there to ask its user")
        self._authorization_url = authorization_url
        self.asked = True
        await asker.ask(self.spec, authorization_url)

    async def _callback(self) -> AuthorizationCodeResult:
        asker = self.asker
        if asker is None:
            self.refused = True
            raise NotConnected("no turn is there to ask its user")
        try:
            return await asker.answer(self.spec, self._authorization_url)
        except NotConnected:
            self.refused = True
            raise


class UserPool:
    """The per-user sessions of one event loop."""

    def __init__(self) -> None:
        self.connections: dict[tuple[str, int], UserConnection] = {}
        # As last handed in (`offer`, `connect_one`), for every session of the pool.
        self.limits = DEFAULT_LIMITS
        # The user's servers that `offer` found no stored grant for, or whose grant did not
        # open a session (refused, the server down or slow): not looked up or tried that way
        # again in this process under the same declaration (its fingerprint), so no later
        # turn reads or waits for them; a session that opens clears it.
        self.not_quietly: dict[tuple[str, int], str] = {}

    async def connect(self, specs: Iterable[ServerSpec], asker: Asker) -> list[Connection]:
        """This user's sessions with these servers, asking them (through the turn) for the
        grants they have not given; those they refuse are left out, and asked again by the
        next turn."""
        mine = [await self._session(spec, asker) for spec in await self._declared(specs, asker)]
        await asyncio.gather(*(self._settle(c, asker) for c in mine))
        return [c for c in mine if c.client is not None]

    async def offer(
        self, specs: Iterable[ServerSpec], asker: Asker, limits: McpLimits | None = None
    ) -> tuple[list[Connection], list[ServerSpec]]:
        """Without asking: this user's sessions that are open, those their stored grants
        open within the connect timeout (the first turn of a user connected before this
        process started, waiting once for all of them), and the servers left for the turn
        to open if it needs one (`connect_one`)."""
        self._limit(limits)
        declared = await self._declared(specs, asker)
        quiet = [
            await self._quietly(spec, asker)
            for spec in declared
            if (spec.name, asker.user_id) not in self.connections
            and self.not_quietly.get((spec.name, asker.user_id)) != spec.fingerprint
        ]
        opening = [c for c in quiet if c is not None]
        if opening:
            await self._first_attempts(opening, asker)
        open_now: list[Connection] = []
        later = []
        for spec in declared:
            connection = self.connections.get((spec.name, asker.user_id))
            if connection is not None and connection.client is not None:
                open_now.append(await self._session(spec, asker))
            else:
                later.append(spec)
        return open_now, later

    async def _quietly(self, spec: ServerSpec, asker: Asker) -> UserConnection | None:
        """This user's session opened with the grant they stored, asking nobody (a grant
        that does not work leaves it down); None when they stored none."""
        if await asker.storage(spec).get_tokens() is None:
            self.not_quietly[spec.name, asker.user_id] = spec.fingerprint
            return None
        connection = UserConnection(spec, asker, self.limits)
        connection.asker = None  # before its task first runs: nobody is asked from here
        self.connections[spec.name, asker.user_id] = connection
        return connection

    async def _first_attempts(self, opening: list[UserConnection], asker: Asker) -> None:
        with suppress(TimeoutError):
            async with asyncio.timeout(asker.client.connect_timeout):
                await asyncio.gather(*(c.tried.wait() for c in opening))
        for connection in opening:
            # Unless a turn took it over meanwhile to ask its user (`connect_one`).
            if connection.client is None and connection.asker is None:
                key = (connection.spec.name, connection.user_id)
                self.not_quietly[key] = connection.spec.fingerprint
                if self.connections.get(key) is connection:
                    del self.connections[key]
                await connection.close()

    async def connect_one(
        self, spec: ServerSpec, asker: Asker, limits: McpLimits | None = None
    ) -> Connection | None:
        """This user's session with this server, asking them through the turn if they must;
        None when it did not open (the turn's line says why)."""
        self._limit(limits)
        connection = await self._session(spec, asker)
        await self._settle(connection, asker)
        return connection if connection.client is not None else None

    async def _declared(self, specs: Iterable[ServerSpec], asker: Asker) -> list[ServerSpec]:
        """The servers of these that each user connects to; this user's sessions with
        servers no longer declared so, or declared otherwise, are closed."""
        wanted = [spec for spec in specs if spec.enabled and spec.oauth]
        for key, old in list(self.connections.items()):
            if key[1] != asker.user_id:
                continue
            declared = next((s for s in wanted if s.name == key[0]), None)
            if declared is None or declared.fingerprint != old.spec.fingerprint:
                del self.connections[key]
                await old.close()
        return wanted

    async def _session(self, spec: ServerSpec, asker: Asker) -> UserConnection:
        connection = self.connections.get((spec.name, asker.user_id))
        if connection is not None and connection.client is None and connection.tried.is_set():
            # Down since an earlier turn (refused, or failed): this turn tries afresh.
            self.connections.pop((spec.name, asker.user_id))
            await connection.close()
            connection = None
        if connection is None:
            connection = UserConnection(spec, asker, self.limits)
            self.connections[spec.name, asker.user_id] = connection
        connection.asker = asker
        connection.asked = False  # what an earlier turn asked was settled there
        connection.spec = spec
        return connection

    async def _settle(self, connection: UserConnection, asker: Asker) -> None:
        if not connection.tried.is_set():
            with suppress(TimeoutError):
                limit = asker.wait_seconds + asker.client.connect_timeout
                async with asyncio.timeout(limit):
                    await connection.tried.wait()
        up = connection.client is not None
        if up:
            self.not_quietly.pop((connection.spec.name, connection.user_id), None)
        if connection.asked:
            connection.asked = False
            reason = "" if up else str(connection.reason or _("it did not connect"))
            await asker.settled(connection.spec, up, reason)
        if not up:
            # Nothing opens without a grant, and no retry asks anybody: the next turn tries
            # again, afresh.
            self.connections.pop((connection.spec.name, connection.user_id), None)
            await connection.close()

    def _limit(self, limits: McpLimits | None) -> None:
        if limits is not None:
            self.limits = limits
            for connection in self.connections.values():
                connection.limits = limits

    def release(self, asker: Asker) -> None:
        """The turn ended: its user is no longer there to be asked."""
        for connection in self.connections.values():
            if connection.asker is asker:
                connection.asker = None

    async def close(self) -> None:
        self.not_quietly = {}
        connections, self.connections = list(self.connections.values()), {}
        await asyncio.gather(*(connection.close() for connection in connections))


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, UserPool] = (
    weakref.WeakKeyDictionary()
)


def user_pool() -> UserPool:
    loop = asyncio.get_running_loop()
    if loop not in _pools:
        _pools[loop] = UserPool()
    return _pools[loop]
