"""One session per MCP server and process, opened once and reused by every turn. A session
that fails is reopened with backoff; its tools are listed at connect and listed again when
the server says they changed. A server that is down costs only the calls made to it."""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
import httpx2
import mcp_types as types
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.auth import OAuthFlowError, OAuthTokenError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import MCP_SESSION_ID, streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.dispatcher import ProgressFnT

from chat.agent.mcp import apps, elicitation, sampling
from chat.agent.mcp.bounded_http import LEGACY_EVENT_LIMIT, Bounds
from chat.agent.mcp.config import ServerSpec
from chat.agent.mcp.limits import DEFAULT_LIMITS, McpLimits
from chat.agent.mcp.logs import ASKED_LEVEL, PARSED_PER_CALL, Logged
from chat.agent.mcp.machine_auth import (
    MachineConfigError,
    MemoryTokens,
    UnreadableSecret,
    machine_auth,
)
from chat.agent.mcp.result_type import complete_by_default
from chat.agent.mcp.screening import offerable, output_validators
from chat.agent.mcp.sessions import kept_session_id
from chat.agent.mcp.stdio import MESSAGE_LIMIT, OVERSIZED, Traffic, megabytes, watched_stdio
from chat.agent.schemas import BOUNDS, SchemaBounds

logger = logging.getLogger("glassbox.mcp")

FIRST_RETRY = 0.5
LAST_RETRY = 30.0
# A session that held this long earned a quick retry when it breaks; one that broke sooner
# (a server that starts, then fails at once) keeps backing off.
STABLE = 10.0
CLOSE_WAIT = 5.0
# What a server answers to a method it does not serve.
NOT_SERVED = (types.METHOD_NOT_FOUND, types.INVALID_REQUEST)
LOST = _("the connection was lost")
FORGOT = _("it forgot the session (it may have restarted)")


class Unreachable(Exception):
    """The server has no session now; the message is for people (no URL, no secrets)."""


class Forgotten(Exception):
    """The server answered that it does not know the session: it restarted, or let the
    session lapse. The request never ran."""


@dataclass(frozen=True, slots=True)
class Connected:
    """A session is open and its tools are listed."""

    client: Client
    since: datetime


@dataclass(frozen=True, slots=True)
class Down:
    """No session: not opened yet (since None), or failed and retried with backoff."""

    reason: str | Promise = ""
    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class Closing:
    """The connection was closed (its declaration changed or went): nothing opens again."""


State = Connected | Down | Closing


@dataclass(slots=True)
class Attempt:
    """What one attempt at a session learns on the way, new for each attempt."""

    # Set when the session breaks: the watch over it ends, and the next attempt begins.
    broken: asyncio.Event = field(default_factory=asyncio.Event)
    # The session's subscription to tool changes, once it is open.
    listening: asyncio.Task[None] | None = None
    # The last HTTP status the server answered: the SDK reports a refused session as a
    # JSON-RPC error, which does not say that the credentials were the reason.
    status: int | None = None
    # The server answered a request of this session "not found" (HTTP 404, or 400 with
    # a word on the session from servers that predate the rule).
    forgotten: bool = False
    # The session id a Streamable HTTP server gave (Mcp-Session-Id); "" for servers without
    # sessions (stdio, stateless HTTP). For the audit and the traces (`mcp.session.id`).
    session_id: str = ""


@functools.cache
def trusted() -> ssl.SSLContext:
    """The TLS context of every HTTP server's client, made once a process: each makes its
    own by default, reading the CA bundle, which held the event loop 25 ms and more each
    time a session opened."""
    return httpx2.create_ssl_context()


class Connection:
    """The session with one server; the task that owns it lives as long as the process.
    Its state is one of Connected, Down and Closing, changed only by `_become`."""

    def __init__(
        self,
        spec: ServerSpec,
        bounds: SchemaBounds = BOUNDS,
        *,
        limits: McpLimits = DEFAULT_LIMITS,
    ) -> None:
        self.spec = spec
        # Its pool's, as last handed in (Pool.open).
        self.limits = limits
        # What its tools' schemas, and the arguments checked against them, may take.
        self.bounds = bounds
        self.state: State = Down()
        self.attempt = Attempt()
        # Set while Connected.
        self.up = asyncio.Event()
        # Set once the first attempt ended either way, so a turn waits for it at most once.
        self.tried = asyncio.Event()
        # Set when the server says its tools changed: the watch lists them again.
        self.stale = asyncio.Event()
        # The tools as last listed (kept while down, for the health page).
        self.listed: tuple[types.Tool, ...] = ()
        # The tools a session of this declaration listed before this process started
        # (chat.servers.heartbeat): offered while the first attempt is under way.
        self.remembered: tuple[types.Tool, ...] = ()
        # Why listed tools are not offered (a schema that cannot be checked in bounded time,
        # tools beyond the bound): for the health page.
        self.not_offered: tuple[str, ...] = ()
        # Sessions opened so far, and the wait before each new attempt: for the health view
        # and to show the backoff holds.
        self.sessions = 0
        self.waits: list[float] = []
        # Glassbox's own token for a server declared with client credentials: this
        # connection's (one declaration's) only, so a changed or removed declaration's token
        # goes with its connection and is never sent again.
        self.machine_tokens = MemoryTokens()
        # What the server sent that was dropped or cleaned, counted for the calls' lines.
        self.traffic = Traffic()
        # Where the server's log messages go: the running calls' (chat.agent.mcp.logs).
        self.log_sinks: list[Logged] = []
        self.task = asyncio.create_task(self._keep_open(), name=f"mcp:{spec.name}")

    def _become(self, state: State) -> None:
        self.state = state
        if isinstance(state, Connected):
            self.up.set()
        else:
            self.up.clear()

    @property
    def client(self) -> Client | None:
        return self.state.client if isinstance(self.state, Connected) else None

    @property
    def reason(self) -> str | Promise:
        """Why there is no session, for people (no URL, no secrets); '' while connected."""
        return self.state.reason if isinstance(self.state, Down) else ""

    @property
    def since(self) -> datetime | None:
        """Since when it has been up, or down (for operators: chat.servers.admin's health
        page)."""
        return None if isinstance(self.state, Closing) else self.state.since

    @property
    def broken(self) -> asyncio.Event:
        return self.attempt.broken

    @property
    def listening(self) -> asyncio.Task[None] | None:
        return self.attempt.listening

    @property
    def connecting(self) -> bool:
        """The first attempt at a session is under way."""
        return not self.tried.is_set() and isinstance(self.state, Down)

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None = None
    ) -> types.CallToolResult:
        if self.connecting:
            # A remembered tool, called before the first session is open: the call waits
            # for this server only, at most its connect timeout.
            with suppress(TimeoutError):
                async with asyncio.timeout(self.limits.connect_timeout):
                    await self.tried.wait()
        client = self.client
        try:
            return await self._call(client, tool, arguments, progress)
        except Forgotten:
            pass
        # The call never ran, so it runs once more, in a new session.
        client = await self._renew(client)
        try:
            return await self._call(client, tool, arguments, progress)
        except Forgotten:
            self._renew_later(client)
            raise Unreachable(_("it forgot the new session at once")) from None

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """A resource of this server (an app's interface), within the connect timeout; raises
        Unreachable without a session."""
        client = self.client
        if client is None:
            raise Unreachable(self.reason or _("it is not connected"))
        async with asyncio.timeout(self.limits.connect_timeout):
            return await client.read_resource(uri)

    async def _renew(self, forgotten: Client | None) -> Client | None:
        """A new session in place of the one the server forgot (unless another call or the
        change stream already replaced it)."""
        self._renew_later(forgotten)
        try:
            async with asyncio.timeout(FIRST_RETRY + self.limits.connect_timeout):
                await self.up.wait()
        except TimeoutError:
            raise Unreachable(self.reason or _("it is not connected")) from None
        return self.client

    def _renew_later(self, forgotten: Client | None) -> None:
        if forgotten is not None and self.client is forgotten:
            self._lost(None, FORGOT)

    async def _call(
        self,
        client: Client | None,
        tool: str,
        arguments: dict[str, Any],
        progress: ProgressFnT | None,
    ) -> types.CallToolResult:
        if client is None:
            raise Unreachable(self.reason or _("it is not connected"))
        try:
            with elicitation.calling(self):
                # The call's traceparent goes in by the SDK's own injection (traceparent.py).
                return await client.call_tool(tool, arguments, progress_callback=progress)
        except (httpx2.TransportError, OSError, EOFError) as exc:
            self._lost(exc)
            raise Unreachable(_("the connection was lost during the call")) from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lost(exc)
                raise Unreachable(_("the connection was lost during the call")) from None
            if self.attempt.forgotten:
                raise Forgotten from None
            raise
        except Exception as exc:
            if _closed(exc):
                self._lost(exc)
                raise Unreachable(_("the connection was lost during the call")) from None
            raise

    async def close(self) -> None:
        self._become(Closing())
        self.task.cancel()
        # Bounded: a transport may shield its own clean-up (the SSE client waits on its read
        # timeout for a stream whose server is gone).
        await asyncio.wait({self.task}, timeout=CLOSE_WAIT)

    def _lost(self, exc: BaseException | None, reason: str | Promise = LOST) -> None:
        if not isinstance(self.state, Closing):
            # Closing, the loss is this process's own doing (it stops): nothing to say.
            logger.warning(
                "MCP server %s: %s (%s)",
                self.spec.name,
                reason,
                type(exc).__name__ if exc else "-",
            )
            self._become(Down(reason, timezone.now()))
        self.attempt.broken.set()

    async def _keep_open(self) -> None:
        loop = asyncio.get_running_loop()
        delay = FIRST_RETRY
        while True:
            self.attempt = Attempt()
            connected_at: float | None = None
            try:
                async with self._client() as client:
                    await self._list(client)
                    connected_at = loop.time()
                    self._become(Connected(client, timezone.now()))
                    self.sessions += 1
                    self.tried.set()
                    logger.info("MCP server %s: connected", self.spec.name)
                    await self._watch(client)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anyio wraps failures in exception groups
                if not isinstance(self.state, Closing):
                    # Down from now; a failed retry keeps the time it went down.
                    since = self.since
                    if isinstance(self.state, Connected) or since is None:
                        since = timezone.now()
                    self._become(Down(_describe(exc, self.attempt.status), since))
                    logger.warning("MCP server %s: %s", self.spec.name, self.reason)
            finally:
                if isinstance(self.state, Connected):
                    # Its watch ended without a word on why: the next attempt says.
                    self._become(Down(LOST, timezone.now()))
            if connected_at is not None and loop.time() - connected_at >= STABLE:
                delay = FIRST_RETRY
            self.tried.set()
            self.waits.append(delay)
            del self.waits[:-20]
            await asyncio.sleep(delay)
            delay = min(delay * 2, LAST_RETRY)

    def _client(self) -> Client:
        timeout = self.limits.connect_timeout
        if self.spec.sse:
            legacy = sse_client(
                self.spec.url,
                headers=self.spec.headers,
                timeout=timeout,
                sse_read_timeout=self.limits.tool_timeout + 60,
                httpx_client_factory=self._legacy_http,
            )
            return Client(legacy, message_handler=self._on_message, cache=None, **self._asking())
        if self.spec.url:
            # As the SDK's own client (mcp.shared._httpx_utils, private): no redirects
            # followed, the transport follows those within the server's origin itself.
            http = httpx2.AsyncClient(
                headers=self.spec.headers,
                verify=trusted(),
                timeout=httpx2.Timeout(timeout, read=self.limits.tool_timeout + 60),
                auth=self._auth(),
            )
            # Bounded first: the hook after it may read a body.
            http.event_hooks["response"] += [Bounds(self.traffic), self._answered]
            transport = streamable_http_client(
                self.spec.url,
                http_client=http,
                # Events come whole and bounded (chat.agent.mcp.bounded_http): the SDK's own
                # 1 MB bound would end the session at a result of 2 MB.
                max_sse_event_size=2 * MESSAGE_LIMIT,
            )
            return Client(
                complete_by_default(transport),
                message_handler=self._on_message,
                cache=None,
                **self._asking(),
            )
        params = StdioServerParameters(
            command=self.spec.command,
            args=list(self.spec.args),
            env=self.spec.env,
            cwd=self.limits.workdir,
        )
        return Client(
            complete_by_default(watched_stdio(params, self._exited, self.traffic)),
            message_handler=self._on_message,
            cache=None,
            **self._asking(),
        )

    def _legacy_http(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """The legacy SSE transport's client, as the SDK builds it, with bounded bodies."""
        return httpx2.AsyncClient(
            headers=headers,
            verify=trusted(),
            timeout=timeout,
            auth=auth,
            event_hooks={"response": [Bounds(self.traffic, limit=LEGACY_EVENT_LIMIT)]},
        )

    def _asking(self) -> dict[str, Any]:
        """A server may ask the person a question mid-call (chat.agent.mcp.elicitation), log
        what it does, at every level (its readers each choose theirs), and show its tools'
        own interfaces (chat.agent.mcp.apps). One declared with sampling may ask the turn's
        model to write something (chat.agent.mcp.sampling): only then does the session
        declare the capability."""
        asking: dict[str, Any] = {
            "extensions": [apps.declared()],
            "elicitation_callback": functools.partial(elicitation.on_elicit, self),
            "logging_callback": self._logged,
            "log_level": ASKED_LEVEL,
        }
        if self.spec.sampling:
            asking["sampling_callback"] = functools.partial(sampling.on_sample, self)
        return asking

    @contextmanager
    def logging_to(self, logged: Logged) -> Iterator[None]:
        """Around one call: the server's log messages meanwhile go to `logged`."""
        self.log_sinks.append(logged)
        self.traffic.log_budget = PARSED_PER_CALL * len(self.log_sinks)
        try:
            yield
        finally:
            self.log_sinks.remove(logged)
            self.traffic.log_budget = min(
                self.traffic.log_budget, PARSED_PER_CALL * len(self.log_sinks)
            )

    async def _logged(self, params: types.LoggingMessageNotificationParams) -> None:
        # A message names no call: with one call running it is that call's; with several, or
        # none, it could be shown to someone whose call it is not, so it is only counted.
        if len(self.log_sinks) != 1:
            self.traffic.logs += 1
            return
        self.log_sinks[0](params)

    def _auth(self) -> httpx2.Auth | None:
        """How requests to an HTTP server authenticate beyond its headers: a user's own OAuth
        grant (chat.agent.mcp.oauth), Glassbox's own client credentials
        (chat.agent.mcp.machine_auth), or nothing."""
        if self.spec.client_credentials:
            return machine_auth(self.spec.url, self.spec.client_credentials, self.machine_tokens)
        return None

    def _exited(self) -> None:
        """The stdio server's output ended: it exited (or crashed) between calls, or this
        session is closing."""
        if isinstance(self.state, Connected):
            self._lost(None, _("its process exited"))

    @property
    def session_id(self) -> str:
        """The id of the open session, if its server gave one."""
        return self.attempt.session_id if self.client is not None else ""

    async def _answered(self, response: httpx2.Response) -> None:
        self.attempt.status = response.status_code
        if given := kept_session_id(response.headers.get(MCP_SESSION_ID)):
            self.attempt.session_id = given
        if response.request.headers.get(MCP_SESSION_ID) and await _forgot(response):
            self.attempt.forgotten = True
            if response.request.method == "GET":
                # The idle change stream came back to a server that restarted: a new
                # session now, not a failed call later.
                self._renew_later(self.client)

    async def _list(self, client: Client) -> None:
        listed: list[types.Tool] = []
        cursor: str | None = None
        async with asyncio.timeout(self.limits.connect_timeout):
            for _page in range(20):
                page = await client.list_tools(cursor=cursor)
                listed += page.tools
                cursor = page.next_cursor
                if cursor is None:
                    break
        self.listed, self.not_offered = offerable(listed, self.bounds)
        for reason in self.not_offered:
            logger.warning("MCP server %s: %s", self.spec.name, reason)
        # The SDK checks results against their output schemas with Python's `re`: with ours.
        client.session._tool_output_validators.update(output_validators(self.listed, self.bounds))

    @property
    def tools(self) -> list[types.Tool]:
        """The listed tools the agent may use, as the server last described them; none while
        the server is down, and none that can only run as an MCP task (which Glassbox does not
        drive), so the model is never offered a tool that cannot run. While the first session
        is being opened, the tools remembered from an earlier one."""
        if self.client is not None:
            listed = self.listed
        elif self.connecting:
            listed = self.remembered
        else:
            return []
        return [tool for tool in listed if self.spec.allows(tool.name) and not _task_only(tool)]

    async def _watch(self, client: Client) -> None:
        """Until the session breaks: lists the tools again whenever they change."""
        self.attempt.listening = listening = asyncio.create_task(self._listen(client))
        try:
            while True:
                stale = asyncio.create_task(self.stale.wait())
                broken = asyncio.create_task(self.attempt.broken.wait())
                try:
                    await asyncio.wait({stale, broken}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    # Also when the session is closed (the process stops): none left pending.
                    stale.cancel()
                    broken.cancel()
                if self.attempt.broken.is_set():
                    return
                self.stale.clear()
                await self._list(client)
                logger.info("MCP server %s: tools listed again", self.spec.name)
        finally:
            listening.cancel()

    async def _listen(self, client: Client) -> None:
        """Servers of the 2026 protocol announce changes on a subscription stream, if they
        say they do: a server without that optional capability is a working server whose tool
        list is the one it gave at connect."""
        tools = client.server_capabilities.tools
        if tools is None or not tools.list_changed or self.spec.sse:
            # The legacy SSE transport cannot carry the stream (its reader breaks): such a
            # server announces changes as notifications, if at all.
            return
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self.stale.set()
        except ListenNotSupportedError:
            return  # an older server sends notifications/tools/list_changed instead
        except MCPError as exc:
            if exc.code not in NOT_SERVED:
                self._lost(exc)
            # Else it offered the capability but does not serve the stream: the same.
        except Exception as exc:
            # The stream drops when the server goes away: open a new session.
            self._lost(exc)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.stale.set()
        elif isinstance(message, types.ElicitCompleteNotification):
            await elicitation.on_completed(self, message.params.elicitation_id)
        elif isinstance(message, Exception) and _closed(message):
            self._lost(message)


def _task_only(tool: types.Tool) -> bool:
    """A tool that says it runs only as a task (2025-11-25 servers; the 2026 protocol moved
    tasks to an extension, and the SDK leaves the field out there)."""
    execution = tool.execution
    return execution is not None and execution.task_support == "required"


async def _forgot(response: httpx2.Response) -> bool:
    """Whether the server answered a request of a session that it does not know it: 404, as
    the spec says, or a 400 whose JSON error names the session (servers built with the
    TypeScript SDK; their error has no id, so the SDK reports only "an error response")."""
    if response.status_code == 404:
        return True
    if response.status_code != 400 or "json" not in response.headers.get("content-type", ""):
        return False
    body = await response.aread()  # a short error; the SDK reads it again from the cache
    return len(body) < 4096 and b"session" in body.lower()


def _closed(exc: BaseException) -> bool:
    return isinstance(
        exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream
    )


def _describe(exc: BaseException, status: int | None = None) -> str | Promise:
    """A reason for people and logs: the kind of failure, never a URL, header or command.
    `status` is the last HTTP status the server answered, if any."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
    if isinstance(exc, UnreadableSecret):
        return _("its client secret cannot be read")
    if isinstance(exc, MachineConfigError):
        return _("its client's private key cannot be read")
    if isinstance(exc, OAuthTokenError):
        return _("its authorization server refused to issue a token")
    if isinstance(exc, OAuthFlowError):
        return _("its OAuth authorization failed")
    if status in (401, 403):
        return _("it refused the credentials (HTTP %(status)d: unauthorized)") % {"status": status}
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return _("it did not answer in time")
    if isinstance(exc, httpx2.ConnectError | ConnectionError):
        return _("it cannot be reached")
    if isinstance(exc, MCPError | httpx2.HTTPStatusError) and status and status >= 400:
        return _("it answered HTTP %(status)d") % {"status": status}
    if isinstance(exc, FileNotFoundError | PermissionError):
        return _("its command cannot be started")
    if isinstance(exc, MCPError) and exc.code == OVERSIZED:
        # A listing over the bound (chat.agent.mcp.stdio, .bounded_http): its size rides in
        # the error.
        data = exc.error.data if isinstance(exc.error.data, dict) else {}
        return _("it sent a message of %(size)s MB, over the %(limit)s MB allowed") % {
            "size": megabytes(data.get("bytes", 0)),
            "limit": megabytes(data.get("limit", MESSAGE_LIMIT)),
        }
    return _("it failed to start a session (%(error)s)") % {"error": type(exc).__name__}


class Pool:
    """The sessions of one event loop (the server's; each test has its own)."""

    def __init__(self) -> None:
        self.connections: dict[str, Connection] = {}
        self.limits = DEFAULT_LIMITS

    async def connect(
        self, specs: Iterable[ServerSpec], limits: McpLimits | None = None
    ) -> list[Connection]:
        """The connections for these servers, opening new ones and closing those whose
        declaration changed or went; waits for a first attempt only, never for a retry."""
        return await self._wait_for_first(await self.open(specs, limits=limits))

    async def offer(
        self, specs: Iterable[ServerSpec], limits: McpLimits | None = None
    ) -> tuple[list[Connection], list[Connection]]:
        """The connections for these servers, as `connect`, but waiting only for the servers
        whose tools are not known yet that this call opens. One that is connecting offers its
        remembered tools, and a call waits for it; one opened before (at start,
        chat.servers.heartbeat) that is still on its first attempt with no tools remembered
        comes apart, for a turn to wait for only if it needs it (`opened`)."""
        before = dict(self.connections)
        connections = await self.open(specs, limits=limits)
        unknown = [c for c in connections if c.connecting and not c.remembered]
        later = [c for c in unknown if before.get(c.spec.name) is c]
        await self._wait_for_first([c for c in unknown if c not in later])
        return [c for c in connections if c not in later], later

    async def opened(self, connection: Connection) -> Connection:
        """The connection once its first attempt ended (at most its connect timeout)."""
        return (await self._wait_for_first([connection]))[0]

    async def open(
        self,
        specs: Iterable[ServerSpec],
        remembered: Mapping[str, tuple[types.Tool, ...]] | None = None,
        limits: McpLimits | None = None,
    ) -> list[Connection]:
        """Opens sessions with these servers in the background (new connections start with
        the `remembered` tools of their name, if any) and closes those whose declaration
        changed or went; waits for none. `limits`, when given, hold from now on for every
        session of the pool (the settings' as the caller read them)."""
        if limits is not None:
            self.limits = limits
        wanted = {spec.name: spec for spec in specs if spec.enabled}
        for name, connection in list(self.connections.items()):
            spec = wanted.get(name)
            if spec is None or spec.fingerprint != connection.spec.fingerprint:
                del self.connections[name]
                await connection.close()
            elif spec != connection.spec:
                connection.spec = spec  # only the allowed tools changed
        for connection in self.connections.values():
            connection.limits = self.limits
        for name, spec in wanted.items():
            if name not in self.connections:
                self.connections[name] = connection = Connection(spec, limits=self.limits)
                kept = (remembered or {}).get(name, ())
                connection.remembered = offerable(kept, connection.bounds)[0]
        return [self.connections[name] for name in wanted]

    async def _wait_for_first(self, connections: list[Connection]) -> list[Connection]:
        waiting = [c.tried.wait() for c in connections if not c.tried.is_set()]
        if waiting:
            with suppress(TimeoutError):
                async with asyncio.timeout(self.limits.connect_timeout):
                    await asyncio.gather(*waiting)
        return connections

    async def close(self) -> None:
        connections, self.connections = list(self.connections.values()), {}
        # Side by side: each may wait for its server to exit (bounded by CLOSE_WAIT).
        await asyncio.gather(*(connection.close() for connection in connections))


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class Health:
    """One server as this process sees it, for operators."""

    name: str
    state: str  # "connected", "connecting" (the first attempt), "retrying" or "not opened"
    since: datetime | None
    reason: str
    sessions: int
    tools: tuple[str, ...]
    # Why listed tools are not offered, in words.
    not_offered: tuple[str, ...] = ()


def health(names: Iterable[str]) -> dict[str, Health]:
    """What this process knows of these servers' sessions; read from any thread (a snapshot,
    without waiting for anything)."""
    known: dict[str, Connection] = {}
    for each in list(_pools.values()):
        known |= each.connections
    report = {}
    for name in names:
        connection = known.get(name)
        if connection is None:
            report[name] = Health(name, "not opened", None, "", 0, ())
            continue
        up = connection.client is not None
        report[name] = Health(
            name=name,
            state="connected" if up else "connecting" if connection.connecting else "retrying",
            since=connection.since,
            reason="" if up else str(connection.reason),
            sessions=connection.sessions,
            tools=tuple(tool.name for tool in connection.listed),
            not_offered=connection.not_offered,
        )
    return report


def pool() -> Pool:
    loop = asyncio.get_running_loop()
    if loop not in _pools:
        _pools[loop] = Pool()
    return _pools[loop]
