"""Large untrusted JSON parsed in a process apart from the one serving people.

Python's JSON parser holds the interpreter lock for the whole of one message (tens of
milliseconds a megabyte, more for many small objects), so a worker thread is no shelter: the
event loop waits all the same, and every other user's request with it. A large message from
an MCP server is handed to this process instead (started at first need, one message at a
time, at the serving process's own CPU priority: the serving process waits for it), which
sends it back as compact JSON the serving process parses in a few milliseconds: NULs and
lone surrogates cleaned and counted, and a structured result over its bound replaced by a
marker naming its size (chat.agent.mcp.tools says it in words).

Runs as `python -m project.parsed_apart`, importing nothing of Django or the apps."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
import threading
from typing import Any

logger = logging.getLogger("glassbox.mcp")

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# An escaped NUL, and an escape that may be a lone surrogate: only a message holding one
# has its strings walked.
NUL = b"\\u0000"
ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def cleaned(value: Any) -> tuple[Any, int]:
    """Every string of a parsed message without NULs or lone surrogates, and how many
    characters went or were replaced."""
    count = 0

    def clean(item: Any) -> Any:
        nonlocal count
        if isinstance(item, str):
            nuls = item.count("\x00")
            item, surrogates = LONE_SURROGATE.subn("\ufffd", item.replace("\x00", ""))
            count += nuls + surrogates
            return item
        if isinstance(item, list):
            return [clean(part) for part in item]
        if isinstance(item, dict):
            return {clean(k): clean(v) for k, v in item.items()}
        return item

    return clean(value), count


def reduced(line: bytes, marker: str, structured_limit: int) -> tuple[bytes, int]:
    """The message as compact JSON: cleaned, its result's structured content replaced by
    `{marker: size}` when its JSON is over `structured_limit` characters; and the count of
    characters cleaned (bytes that are not UTF-8 included). ValueError if it is not JSON."""
    text = line.decode("utf-8", errors="replace")
    count = text.count("\ufffd") - line.count(b"\xef\xbf\xbd")
    message, more = json.loads(text, strict=False), 0
    if NUL in line or ESCAPED_SURROGATE.search(line) or "\x00" in text:
        message, more = cleaned(message)
    result = message.get("result") if isinstance(message, dict) else None
    if isinstance(result, dict) and "structuredContent" in result:
        size = len(json.dumps(result["structuredContent"], separators=(",", ":")))
        if size > structured_limit:
            result["structuredContent"] = {marker: size}
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return body.encode(), count + more


def serve() -> None:
    """The worker: a request is `<size> <structured limit> <marker>\\n` and the line; an
    answer `ok <size> <cleaned>\\n` and the JSON, or `no 0 0\\n` for what is not JSON."""
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    while header := requests.readline():
        size, limit, marker = header.decode().split()
        line = requests.read(int(size))
        try:
            body, count = reduced(line, marker, int(limit))
        except (ValueError, RecursionError):
            answers.write(b"no 0 0\n")
        else:
            answers.write(b"ok %d %d\n" % (len(body), count) + body)
        answers.flush()


class Apart:
    """The serving side: one worker process, started when first needed and again after it
    died, spoken to from a worker thread (its pipes' reads and writes let the interpreter
    go); a message that finds no worker is parsed here instead."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    async def reduced(self, line: bytes, marker: str, structured_limit: int) -> tuple[bytes, int]:
        """As `reduced` above, in the worker process. ValueError if it is not JSON."""
        return await asyncio.to_thread(self._reduced, line, marker, structured_limit)

    def _reduced(self, line: bytes, marker: str, limit: int) -> tuple[bytes, int]:
        with self.lock:
            try:
                return self._exchange(line, marker, limit)
            except NotJson:
                raise
            except (OSError, ValueError) as exc:
                logger.warning("The JSON parser apart failed (%r): parsing here", exc)
                self.close()
        return reduced(line, marker, limit)

    def _worker(self) -> subprocess.Popen[bytes]:
        if self.process is not None and self.process.poll() is not None:
            self.close()
        if self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "project.parsed_apart"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )  # fmt: skip
        return self.process

    def _exchange(self, line: bytes, marker: str, limit: int) -> tuple[bytes, int]:
        process = self._worker()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"%d %d %s\n" % (len(line), limit, marker.encode()) + line)
        process.stdin.flush()
        status, size, count = process.stdout.readline().split()
        if status != b"ok":
            raise NotJson("not JSON")
        body = process.stdout.read(int(size))
        if len(body) != int(size):
            raise OSError("the worker ended mid-answer")
        return body, int(count)

    def close(self) -> None:
        """Ends the worker (a later message starts another)."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()


class NotJson(ValueError):
    pass


if __name__ == "__main__":
    serve()
