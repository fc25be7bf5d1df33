"""What a hostile MCP server's calls cost other people: for each misbehaviour of
tests/support/hostile_mcp_server.py (a 50 MB result, a huge structured result, bytes that
are not UTF-8, dirty titles, a flood of 10,000 progress and 10,000 log messages, a call that
never answers, a 100 KB URL question, questions that never stop), one turn of the demo
user calls it over a served Glassbox (Daphne, SQLite, the offline demo model) while another
user's browser GETs the conversation list 20 times a second. The 50 MB result is also
served over Streamable HTTP (a JSON body, and an event stream) and the legacy SSE transport,
by the SDK's own apps (their processes below Glassbox's CPU priority, as its stdio servers
are: a real one runs on a machine of its own). Printed per case (at least three turns, and
more until the prober has run 4 s): the prober's p50/p99/max in ms, how much the serving
process's peak resident memory grew, the CPU time of the serving process and of the rest of
the machine, and the same with no case running as the baseline. A clean call is measured
twice: as the process's first turn (which loads what turns use, the model's SDK among
them) and again as the reference the hostile cases compare with.

Run: `.venv/bin/python bench/hostile_servers.py [part of a case's name ...]` (about two
minutes for every case)."""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from common import ROOT, cpu_seconds, machine, machine_busy_seconds, percentile, report

from chat.agent.mcp.stdio import LOWER_PRIORITY
from tests.support.mcp import http_server
from tests.support.resident import kilobytes
from tests.support.servers import login, manage, serve

HOSTILE = [sys.executable, "-m", "tests.support.hostile_mcp_server"]
SERVERS = [
    {"name": "hostile", "command": HOSTILE[0], "args": HOSTILE[1:],
     "env": {"HOSTILE_SCHEMA": "calls"}},
    {"name": "dirty", "command": HOSTILE[0], "args": HOSTILE[1:],
     "env": {"HOSTILE_SCHEMA": "dirty"}},
]  # fmt: skip
# The same server over HTTP, by name: (the legacy SSE transport?, its environment).
OVER_HTTP = {
    "json": (False, {}),
    "stream": (False, {"HOSTILE_STREAM": "1"}),
    "legacy": (True, {}),
}
CASES = {
    # The process's first turn loads what turns use (the model's SDK among them), apart.
    "a clean call, the process's first turn": "dirty__ping {}",
    "a clean call (the reference)": "dirty__ping {}",
    "50 MB result": "hostile__big {}",
    "50 MB result, Streamable HTTP JSON body": "json__big {}",
    "50 MB result, Streamable HTTP event stream": "stream__big {}",
    "50 MB result, legacy SSE": "legacy__big {}",
    "huge structured result": "hostile__structured {}",
    "invalid UTF-8, NUL, lone surrogate": "hostile__garbled {}",
    "NUL and surrogates in titles": "dirty__ping {}",
    "10,000 progress + 10,000 log messages": "hostile__chatter {}",
    "a call that never answers (5 s deadline)": "hostile__forever {}",
    "question with a 100 KB URL": "hostile__portal {}",
    "questions that never stop": "hostile__nag {}",
}
PROBES_PER_SECOND = 20
BASELINE_SECONDS = 10.0
# Each case runs at least this many times under one prober, and again until it has been
# probed for PROBED_SECONDS: a short case gives few samples alone.
REPEATS = 3
PROBED_SECONDS = 4.0
PROBER = ("prober", "prober-bench-password-1")


def browser(url: str, username: str, password: str) -> urllib.request.OpenerDirector:
    """A logged-in browser of another user."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{url}/accounts/login/").read().decode()
    field = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert field is not None, "the login page has no form"
    token = field.group(1)
    form = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    opener.open(urllib.request.Request(f"{url}/accounts/login/",
                                       data=urllib.parse.urlencode(form).encode(),
                                       headers={"Referer": f"{url}/accounts/login/"}))  # fmt: skip
    return opener


class Prober:
    """GETs `/` as another user PROBES_PER_SECOND times a second until stopped; each
    request's time in ms. A process of its own, as another person's browser is: in this one
    its requests would wait on the interpreter lock behind the turn's own socket client."""

    def __init__(self, url: str, opener: urllib.request.OpenerDirector) -> None:
        self.url, self.opener = url, opener
        self.times: list[float] = []
        self.failures = 0
        context = multiprocessing.get_context("fork")
        self.stopped = context.Event()
        self.mine, theirs = context.Pipe(duplex=False)
        self.process = context.Process(target=self.run, args=(theirs,), daemon=True)

    def start(self) -> None:
        self.process.start()

    def join(self) -> None:
        self.times, self.failures = self.mine.recv()
        self.process.join()

    def run(self, answer) -> None:
        interval = 1 / PROBES_PER_SECOND
        next_at = time.perf_counter()
        while not self.stopped.is_set():
            started = time.perf_counter()
            try:
                with self.opener.open(f"{self.url}/", timeout=30) as response:
                    response.read()
                    ok = response.status == 200
            except OSError:
                ok = False
            self.times.append((time.perf_counter() - started) * 1000)
            self.failures += not ok
            next_at += interval
            self.stopped.wait(max(0.0, next_at - time.perf_counter()))
        answer.send((self.times, self.failures))


async def hostile_turn(server, conversation: str, cookies: str, question: str) -> dict:
    """Asks over a JSON socket as the demo user, answering every question the server asks
    (accepting, or "not sure" to a form); the `done` event, with the tool's closing line
    under "line"."""
    import websockets
    from websockets.typing import Subprotocol

    url = server.url.replace("http", "ws") + f"/ws/c/{conversation}/"
    answered: set[str] = set()
    async with websockets.connect(
        url,
        additional_headers={"Cookie": cookies, "Origin": server.url},
        subprotocols=[Subprotocol("glassbox.json")],
        max_size=None,
        open_timeout=60,
    ) as socket:
        await socket.send(json.dumps({"message": question}))
        line = ""
        while True:
            event = json.loads(await socket.recv())
            if event["type"] in ("done", "error"):
                return event | {"line": line}
            tool = event.get("tool", "") if event["type"] == "status" else ""
            if tool == question.split()[0] and event["state"] in ("done", "failed"):
                line = event["message"]
            for card in event.get("questions", []) if event["type"] == "questions" else []:
                if card["state"] == "waiting" and card["id"] not in answered:
                    answered.add(card["id"])
                    values = {"sure": False} if card["fields"] else {}
                    await socket.send(json.dumps(
                        {"elicitation": card["id"], "action": "accept", "answer": values}
                    ))  # fmt: skip


def probed(server, opener, work) -> tuple[str, str]:
    """(figures, how the turn ended) while `work()` runs, or for BASELINE_SECONDS."""
    status = Path(f"/proc/{server.process.pid}")
    # "5" resets the serving process's peak resident size (proc(5), clear_refs).
    (status / "clear_refs").write_text("5")
    resident = kilobytes("VmRSS", status / "status")
    prober = Prober(server.url, opener)
    serving, machine_cpu = cpu_seconds(server.process.pid), machine_busy_seconds()
    prober.start()
    ended = ""
    try:
        if work is None:
            time.sleep(BASELINE_SECONDS)
        else:
            ended = work()
            time.sleep(0.5)  # what the turn's end costs, too
    finally:
        prober.stopped.set()
        prober.join()
    serving = cpu_seconds(server.process.pid) - serving
    others = machine_busy_seconds() - machine_cpu - serving
    times = prober.times
    figures = (
        f"p50 {percentile(times, 50):6.1f}  p99 {percentile(times, 99):6.1f}  "
        f"max {max(times):6.1f} ms  ({len(times)} GETs, {prober.failures} failed)  "
        f"peak memory +{max(0, kilobytes('VmHWM', status / 'status') - resident) / 1024:.0f} MB  "
        f"CPU {serving:.2f} s serving, {others:.2f} s the rest"
    )
    return figures, ended


def main() -> None:
    rows = [("machine", machine())]
    with contextlib.ExitStack() as servers:
        module = "tests.support.hostile_mcp_server"
        declared = SERVERS + [
            {
                "name": name,
                "url": servers.enter_context(
                    http_server(module, sse=sse, environment=env, HOSTILE_SCHEMA="calls")
                ),
            }
            for name, (sse, env) in OVER_HTTP.items()
        ]
        lower_http_servers(module)
        probe_all(rows, json.dumps(declared))
    report("Another user's GET / at 20/s while a hostile MCP server misbehaves", rows)


def lower_http_servers(module: str) -> None:
    """The HTTP servers below Glassbox's CPU priority, as its stdio servers are
    (chat.agent.mcp.stdio.LOWER_PRIORITY): a real one runs on a machine of its own, not on
    the 2 cores that serve the prober."""
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if module.encode() in command and ({b"--http", b"--sse"} & set(command)):
            os.setpriority(os.PRIO_PROCESS, int(entry.name), LOWER_PRIORITY)


def probe_all(rows: list[tuple[str, str]], servers: str) -> None:
    with (
        tempfile.TemporaryDirectory() as work,
        serve(
            Path(work),
            GLASSBOX_MCP_SERVERS=servers,
            GLASSBOX_TOOL_TIMEOUT="5",
            GLASSBOX_DEMO_DELAY="0",
            GLASSBOX_TURNS_PER_MINUTE="1000",
            LOG_LEVEL="ERROR",
        ) as server,
    ):
        manage(server.env, "shell", "-c",
               "from django.contrib.auth.models import User; "
               f"User.objects.create_user({PROBER[0]!r}, password={PROBER[1]!r})")  # fmt: skip
        opener = browser(server.url, *PROBER)
        figures, _ended = probed(server, opener, None)
        rows.append(("baseline (no hostile call)", figures))
        chosen = sys.argv[1:]  # parts of case names: only those cases
        for name, question in CASES.items():
            if chosen and not any(part in name for part in chosen):
                continue
            conversation, cookies = login(server.url)

            def turn(question=question, conversation=conversation, cookies=cookies) -> str:
                ended: list[str] = []
                began = time.perf_counter()
                while len(ended) < REPEATS or time.perf_counter() - began < PROBED_SECONDS:
                    started = time.perf_counter()
                    done = asyncio.run(hostile_turn(server, conversation, cookies, question))
                    seconds = time.perf_counter() - started
                    ended.append(f"{done.get('state', done)} in {seconds:.1f} s")
                kinds = sorted(set(ended), key=ended.index)
                return f"{len(ended)} turns: " + ", ".join(kinds) + f"; {done['line']}"

            figures, ended = probed(server, opener, turn)
            rows.append((name, figures))
            rows.append(("  the turn", ended))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
