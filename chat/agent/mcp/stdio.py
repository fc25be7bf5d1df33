"""A stdio server's session, read with bounds, that knows when the process is gone.

mcp 2.3.0's `stdio_client` is forked here for its reader only (the process is started and
stopped by the SDK's own helpers, pinned by tests/chat/test_hostile_servers.py), because of
what a hostile server can write on its stdout:

- a 50 MB line: the SDK joins each chunk to all the line before it (quadratic, seconds of
  the event loop) and parses it whole; here a line over MESSAGE_LIMIT is skipped as it
  streams, and its request is answered with an error that says so (`Oversized`);
- bytes that are not UTF-8: the SDK's strict decoding ends the session; here they become
  U+FFFD;
- a lone surrogate (`\\ud800`) or a NUL in a string: pydantic's JSON parser refuses the
  former, so the SDK drops the message and its call waits until its deadline; here both
  are cleaned (a surrogate becomes U+FFFD, a NUL goes) and the message is kept.

What was dropped or cleaned is counted on `Traffic`, for the calls' lines to say it."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client import stdio as sdk
from mcp.shared.message import SessionMessage

from project import parsed_apart as apart
from project.parsed_apart import ESCAPED_SURROGATE, NUL

logger = logging.getLogger("glassbox.mcp")

# The largest message a server may send (a line of JSON): a result beyond it is dropped.
# Parsing one this large holds the event loop about 0.1 s (bench/hostile_servers.py).
MESSAGE_LIMIT = 4 * 1024 * 1024
# A line longer than this is parsed in a process apart (project.parsed_apart): the parser
# would hold the serving process's interpreter for the whole line (tens of ms a megabyte),
# on a worker thread too.
PARSED_ASIDE = 256 * 1024
# The largest structured result kept (its JSON); a larger one is left out in words.
STRUCTURED_LIMIT = 256 * 1024
# What stands for a structured result the process apart left out, with its size: a key no
# server can know (chat.agent.mcp.screening lets it past the tool's output schema).
STRUCTURED_DROPPED = f"glassbox.dropped.{secrets.token_hex(8)}"
APART = apart.Apart()
# Bytes asked of the pipe at once: a large result arrives in few reads.
READ_SIZE = 1024 * 1024
# The JSON-RPC error code of a result that was over MESSAGE_LIMIT (the range JSON-RPC leaves
# to implementations): chat.agent.mcp.tools says it in words.
OVERSIZED = -32090
# The request id of a response, read from the head of its line (SDK servers write `jsonrpc`
# and `id` first): an oversized line is never parsed.
HEAD = 512
REQUEST_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
# A log message: parsed only while a running call wants more (Traffic.log_budget), else
# counted and dropped unparsed, so a flood costs the event loop a byte search each, and no
# task of the SDK's.
PROGRESS_REPORT = re.compile(rb'^\s*\{[^{}]{0,80}"method"\s*:\s*"notifications/progress"')
LOG_MESSAGE = re.compile(rb'^\s*\{[^{}]{0,80}"method"\s*:\s*"notifications/message"')
# A longer log message is never parsed (its call keeps 400 characters of it): only counted.
LOG_LINE_LIMIT = 16 * 1024
# Progress reports and log messages the reader passes over a second, after a first burst:
# beyond that it reads the server's output more slowly, so a flood fills the pipe and holds
# the server on its own writes. 10,000 a second cost the serving process a tenth of its CPU
# (bench/hostile_servers.py); at this pace a flood slows its own call, no one else's.
NOTICES_PER_SECOND = 5000
NOTICES_AT_ONCE = 1000
# How much lower than the serving process's a server's CPU priority is (nice(1) steps): on
# a machine of few cores, a server that burns CPU (a flood, a huge result to build) slows
# itself first, not everyone's pages (bench/hostile_servers.py).
LOWER_PRIORITY = 10


@dataclass(slots=True)
class Traffic:
    """What one connection's reader dropped or cleaned, counted since it was opened."""

    # Messages over MESSAGE_LIMIT, and the bytes of the last one.
    oversized: int = 0
    oversized_bytes: int = 0
    # Characters that were not text (bytes that are not UTF-8, lone surrogates, NULs).
    cleaned: int = 0
    # Progress reports the reader replaced with a later one of the same read.
    progress_skipped: int = 0
    # Log messages not kept: beyond the running calls' budget, too long, or of no one call.
    logs: int = 0
    # Log messages the reader may still parse for the running calls (chat.agent.mcp.logs).
    log_budget: int = 0


class EndWatched:
    """The transport's read stream (the SDK's `ReadStream` protocol), calling `on_end` once
    when it ends: the process exited, or the session was closed."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self.stream = stream
        self.on_end: Callable[[], None] | None = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self.stream, "last_context", None)

    def _ended(self) -> None:
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            on_end()

    async def receive(self) -> Any:
        try:
            return await self.stream.receive()
        except Exception:
            self._ended()
            raise

    async def aclose(self) -> None:
        await self.stream.aclose()

    def __aiter__(self) -> EndWatched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.stream.__anext__()
        except (StopAsyncIteration, Exception):
            self._ended()
            raise

    async def __aenter__(self) -> EndWatched:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.stream.__aexit__(*exc)


class Pace:
    """A token bucket of notices: how long to wait, having passed over `spent` more."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.allowance, self.at = burst, time.monotonic()

    def wait(self, spent: int) -> float:
        now = time.monotonic()
        self.allowance = min(self.burst, self.allowance + (now - self.at) * self.rate) - spent
        self.at = now
        return max(0.0, -self.allowance / self.rate)


def megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f}".removesuffix(".0")


def cleaned(value: Any, traffic: Traffic) -> Any:
    """Every string in a parsed message without NULs or lone surrogates."""
    value, count = apart.cleaned(value)
    traffic.cleaned += count
    return value


def parse_line(line: bytes, traffic: Traffic) -> SessionMessage | Exception | None:
    """One line of the server's output as a message, cleaned where it must be (None for a
    log message only counted)."""
    if LOG_MESSAGE.match(line):
        if traffic.log_budget <= 0 or len(line) > LOG_LINE_LIMIT:
            traffic.logs += 1
            return None
        traffic.log_budget -= 1
    text = line.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in line:
        traffic.cleaned += text.count("\ufffd")
    try:
        # Python's parser, then pydantic on what it built: a quarter of the time pydantic's
        # own JSON parser takes on a large result (10 ms against 40 for 2 MB, the event loop
        # held all along), and it takes raw controls and escaped lone surrogates.
        raw = json.loads(text, strict=False)
        if NUL in line or ESCAPED_SURROGATE.search(line):
            raw = cleaned(raw, traffic)
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(raw))
    except ValueError as exc:
        logger.warning("MCP server sent a message that is not JSON-RPC (%s)", type(exc).__name__)
        return exc


async def parse_apart(line: bytes, traffic: Traffic) -> SessionMessage | Exception | None:
    """A large line as `parse_line` reads it, parsed in the process apart first."""
    if LOG_MESSAGE.match(line):
        return parse_line(line, traffic)  # counted, never parsed: it is over LOG_LINE_LIMIT
    try:
        body, count = await APART.reduced(line, STRUCTURED_DROPPED, STRUCTURED_LIMIT)
    except ValueError as exc:
        logger.warning("MCP server sent a message that is not JSON-RPC (%s)", type(exc).__name__)
        return exc
    traffic.cleaned += count
    return parse_line(body, traffic)


def oversized(head: bytes, size: int, traffic: Traffic) -> SessionMessage | None:
    """The answer to a request whose response was over MESSAGE_LIMIT (none for a
    notification, or a line whose id cannot be read from its head)."""
    traffic.oversized += 1
    traffic.oversized_bytes = size
    found = REQUEST_ID.search(head[:HEAD])
    if found is None:
        return None
    request_id = json.loads(found.group(1))
    error = types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=OVERSIZED, message=str(size), data={"bytes": size}),
    )
    return SessionMessage(error)


async def _lines(stdout: Any, traffic: Traffic) -> AsyncIterator[SessionMessage | Exception]:
    """The server's output as messages: a line is kept as a list of chunks (never joined
    to itself chunk after chunk), and one over MESSAGE_LIMIT only counted. Of the progress
    reports in one read only the latest is parsed, before any other message and at the
    read's end: a flood costs a byte search per report, and the latest always arrives. The
    reports and log messages passed over are paced (`Pace`)."""
    parts: list[bytes] = []
    size = 0
    head = b""
    latest: bytes | None = None
    pace = Pace(NOTICES_PER_SECOND, NOTICES_AT_ONCE)
    notices = 0
    while True:
        if latest is not None:
            message = parse_line(latest, traffic)
            latest = None
            if message is not None:
                yield message
        if notices and (wait := pace.wait(notices)):
            await anyio.sleep(wait)
        notices = 0
        try:
            chunk = await stdout.receive(READ_SIZE)
        except anyio.EndOfStream:
            return
        # A read of what is already in the pipe does not wait, so a server that writes
        # without pause would hold the event loop for its whole output.
        await anyio.lowlevel.checkpoint()
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:end]
            size += len(piece)
            if size > MESSAGE_LIMIT:
                answer = oversized(head or piece[:HEAD], size, traffic)
                if answer is not None:
                    yield answer
            elif size:
                parts.append(piece)
                line = b"".join(parts)
                if PROGRESS_REPORT.match(line):
                    notices += 1
                    if latest is not None:
                        traffic.progress_skipped += 1
                    latest = line
                else:
                    if latest is not None:
                        message = parse_line(latest, traffic)
                        latest = None
                        if message is not None:
                            yield message
                    message = (
                        await parse_apart(line, traffic)
                        if len(line) > PARSED_ASIDE
                        else parse_line(line, traffic)
                    )
                    if message is not None:
                        yield message
                    else:
                        notices += 1  # a log message only counted
            parts, size, head, start = [], 0, b"", end + 1
        rest = chunk[start:]
        if not rest:
            continue
        if not size:
            head = rest[:HEAD]
        size += len(rest)
        if size <= MESSAGE_LIMIT:
            parts.append(rest)
        elif parts:
            parts = []  # over the limit: only its size and head are kept


def lower_priority(pid: int) -> None:
    """The server's process (and what it starts from now on) below the serving process's
    CPU priority."""
    try:
        own = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, pid, min(19, own + LOWER_PRIORITY))
    except OSError:
        pass  # gone already: its end is read as any other


@asynccontextmanager
async def watched_stdio(
    params: StdioServerParameters, on_exit: Callable[[], None], traffic: Traffic
) -> AsyncIterator[tuple[EndWatched, Any]]:
    """As mcp 2.3.0's `stdio_client` (whose process helpers it calls), with the bounded
    reader above; its read stream says when the server's output ends."""
    command = await sdk._get_executable_command(params.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=params.args,
        env=sdk.get_default_environment() | (params.env or {}),
        errlog=sys.stderr,
        cwd=params.cwd,
    )
    lower_priority(process.pid)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout
        try:
            async with read_writer:
                try:
                    async for message in _lines(process.stdout, traffic):
                        try:
                            await read_writer.send(message)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                finally:
                    await sdk._drain_stdout(process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                logger.warning("MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin
        try:
            async with write_reader:
                async for session_message in write_reader:
                    line = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await process.stdin.send((line + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield EndWatched(read_stream, on_exit), write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
