"""Open but quiet sockets on one worker, beside Chainlit's socket.io doing the same: real users
leave tabs open.

    python bench/quiet_sockets.py                      # 1,000, 2,000, 5,000 sockets, 5 min idle
    python bench/quiet_sockets.py --idle 30 --counts 1000 --systems glassbox

For each count, on a fresh server process (Glassbox: one Daphne, SQLite, the in-memory layer;
Chainlit 2.x from CL_VENV, by default /tmp/chainlit-venv, serving ../shared/peer-bench's
cl_app.py): a warm-up turn, then 100 turns on fresh sockets with nothing else open (the
reference), then `count` sockets opened (Glassbox: logged in, one conversation each; Chainlit:
a session each, its chat started) and left idle, then a question on 100 of them arriving
within 2 s. All but those 100 are held by a second client process, so that the timed
clients' event loop does not carry thousands of connections. Printed: memory per socket
(VmRSS after the idle time minus before opening, over the count), the server's CPU per idle
socket-minute (/proc utime+stime over the idle time), and the first status p50/p99 and turn
p99 of the 100 beside the reference's. Both servers
keep their sockets alive as they would in production (Daphne's and Engine.IO's pings), and
the clients answer them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import (
    accepting,
    conversations,
    cpu_seconds,
    fake_llm,
    free_port,
    glassbox,
    machine,
    percentile,
    report,
)

ROOT = Path(__file__).resolve().parents[1]
PEER_BENCH = Path(os.environ.get("PEER_BENCH", ROOT.parent / "shared" / "peer-bench"))
CL_VENV = Path(os.environ.get("CL_VENV", "/tmp/chainlit-venv"))
QUESTION = "How do I negotiate my salary?"
ASKED = 100
# Handshakes in flight while opening: the listen backlog is not what this measures.
OPENING = 50
PACE = ("--ttft", "0.3", "--tokens", "60", "--rate", "20", "--chunk", "4")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def ws_connect(url: str, **options):
    import websockets

    # The server keeps the socket alive; the client only answers its pings.
    return websockets.connect(url, max_size=None, open_timeout=60, ping_interval=None, **options)


class GlassboxSockets:
    name = "Glassbox"

    @contextmanager
    def serve(self, llm: str, work: Path, count: int):
        with glassbox(work, llm) as server:
            self.server = server
            ids, self.cookies = conversations(server, count + 2 * ASKED)
            self.ids = iter(ids)
            yield server.process.pid

    def set_aside(self, count: int) -> list[str]:
        """Conversations for another process's sockets, none of them this one's."""
        return list(itertools.islice(self.ids, count))

    def take(self, aside: list[str]) -> None:
        self.ids = iter(aside)

    async def open(self):
        from websockets.typing import Subprotocol

        url = self.server.url.replace("http", "ws") + f"/ws/c/{next(self.ids)}/"
        return await ws_connect(
            url,
            additional_headers={"Cookie": self.cookies, "Origin": self.server.url},
            subprotocols=[Subprotocol("glassbox.json")],
        )

    async def ask(self, socket) -> tuple[float, bool]:
        """First status latency (ms) of one question on an open socket, and whether the turn
        completed."""
        await socket.send(json.dumps({"message": QUESTION}))
        first = None
        while True:
            event = json.loads(await socket.recv())
            arrived = time.monotonic_ns()
            call_id = event.get("call_id", "")
            if first is None and event["type"] == "status" and call_id.startswith("call_"):
                first = (arrived - int(call_id[5:])) / 1e6
            if event["type"] in ("done", "error"):
                return first or float("nan"), event.get("state") == "complete"

    def is_open(self, socket) -> bool:
        from websockets.protocol import State

        return socket.state is State.OPEN

    async def close(self, socket) -> None:
        await socket.close()


class ChainlitSockets:
    """Chainlit's Socket.IO, driven as ../shared/peer-bench/cl_client.py does, with a reader
    per socket that answers Engine.IO's pings while it idles."""

    name = "Chainlit"

    @contextmanager
    def serve(self, llm: str, work: Path, count: int):
        app = work / "app"
        app.mkdir()
        shutil.copy(PEER_BENCH / "cl_app.py", app / "cl_app.py")
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update(OPENAI_BASE_URL=llm, OPENAI_API_KEY="bench", CL_MODEL="bench")
        port = free_port()
        log = (work / "chainlit.log").open("wb")
        process = subprocess.Popen(
            [CL_VENV / "bin" / "chainlit", "run", "cl_app.py", "--headless", "--port", str(port),
             "--host", "127.0.0.1"],
            cwd=app, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{port}"
        try:
            wait_port(port, process)
            yield process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()

    def set_aside(self, count: int) -> None:
        """Each session is new: nothing to set aside for another process."""

    def take(self, aside: None) -> None:
        pass

    async def open(self):
        url = self.url.replace("http", "ws") + "/ws/socket.io/?EIO=4&transport=websocket"
        socket = await ws_connect(url, origin=self.url)
        assert (await socket.recv()).startswith("0")
        auth = {"sessionId": str(uuid.uuid4()), "clientType": "webapp", "userEnv": "{}",
                "chatProfile": None, "threadId": None}  # fmt: skip
        await socket.send("40" + json.dumps(auth))
        while not (packet := await socket.recv()).startswith("40"):
            if packet.startswith("44"):
                raise RuntimeError(f"connect refused: {packet}")
        await socket.send('42["connection_successful"]')
        socket.events = asyncio.Queue()
        socket.reader = asyncio.create_task(self._read(socket))
        await self._until_task_end(socket)  # on_chat_start
        return socket

    async def _read(self, socket) -> None:
        async for packet in socket:
            if packet == "2":
                await socket.send("3")
            elif packet.startswith("42"):
                socket.events.put_nowait((time.monotonic_ns(), *json.loads(packet[2:])))

    async def _until_task_end(self, socket) -> list:
        received, started = [], False
        while True:
            arrived, name, *rest = await socket.events.get()
            received.append((arrived, name, rest[0] if rest else None))
            started = started or name == "task_start"
            if name == "task_end" and started:
                return received

    async def ask(self, socket) -> tuple[float, bool]:
        sys.path.insert(0, str(PEER_BENCH))
        import cl_client  # type: ignore[import-not-found]  # ../shared/peer-bench

        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        message = {"id": str(uuid.uuid4()), "threadId": "", "name": "User",
                   "type": "user_message", "output": QUESTION, "createdAt": now}  # fmt: skip
        asking = ["client_message", {"message": message, "fileReferences": []}]
        await socket.send("42" + json.dumps(asking))
        events = await self._until_task_end(socket)
        text, _ = cl_client.streamed_text(events)
        return cl_client.first_step_latency_ms(events), len(text) == 60 * 4

    def is_open(self, socket) -> bool:
        return not socket.reader.done()

    async def close(self, socket) -> None:
        socket.reader.cancel()
        await socket.close()


def wait_port(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not accepting(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.1)


async def asked(system, sockets: list) -> dict:
    """A question on each socket, arriving within 2 s."""

    async def one(socket):
        await asyncio.sleep(random.random() * 2)
        started = time.monotonic()
        latency, complete = await system.ask(socket)
        return latency, complete, time.monotonic() - started

    results = await asyncio.gather(*(one(s) for s in sockets), return_exceptions=True)
    done = [r for r in results if not isinstance(r, BaseException) and r[1]]
    latencies = [r[0] for r in done]
    return {
        "complete": len(done),
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "turn_p99": percentile([r[2] for r in done], 99),
    }


async def fresh_turns(system) -> dict:
    sockets = await asyncio.gather(*(system.open() for _ in range(ASKED)))
    try:
        return await asked(system, sockets)
    finally:
        await asyncio.gather(*(system.close(s) for s in sockets))


async def opened(system, count: int) -> tuple[list, int]:
    gate = asyncio.Semaphore(OPENING)

    async def one():
        async with gate:
            return await system.open()

    results = await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
    sockets = [s for s in results if not isinstance(s, BaseException)]
    return sockets, count - len(sockets)


def hold(system, aside, count: int, pipe) -> None:
    """In a process of its own: opens `count` sockets, says how many opened, keeps them until
    told, then says how many were still open. The clients of the quiet sockets are not the
    clients whose turns are timed: their event loop and collector are their own."""
    system.take(aside)

    async def run() -> None:
        sockets, failed = await opened(system, count)
        pipe.send((len(sockets), failed))
        await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
        still = sum(system.is_open(s) for s in sockets)
        await asyncio.gather(*(system.close(s) for s in sockets), return_exceptions=True)
        pipe.send(still)

    asyncio.run(run())


async def idle_then_asked(system, pid: int, idle: float) -> dict:
    """Opens the sockets that will ask, lets every socket idle, then asks on these."""
    sockets, _failed = await opened(system, ASKED)
    cpu = cpu_seconds(pid)
    await asyncio.sleep(idle)
    figures: dict[str, Any] = {"cpu": cpu_seconds(pid) - cpu, "rss": rss_mib(pid)}
    still = [s for s in sockets if system.is_open(s)]
    figures.update(asked=await asked(system, still), still=len(still), opened=len(sockets))
    await asyncio.gather(*(system.close(s) for s in sockets), return_exceptions=True)
    return figures


async def warm_then_alone(system) -> dict:
    await fresh_turns(system)  # warm-up: imports, templates, the model's connection
    return await fresh_turns(system)


def measure(system, pid: int, count: int, idle: float) -> list[tuple[str, str]]:
    alone = asyncio.run(warm_then_alone(system))
    before = rss_mib(pid)
    started = time.monotonic()
    mine, theirs = multiprocessing.Pipe()
    held = count - ASKED
    holder = multiprocessing.get_context("fork").Process(
        target=hold, args=(system, system.set_aside(held), held, theirs)
    )
    holder.start()
    opened_held, failed = mine.recv()
    opening = time.monotonic() - started
    figures = asyncio.run(idle_then_asked(system, pid, idle))
    mine.send("close")
    still = mine.recv() + figures["still"]
    holder.join()
    sockets = opened_held + figures["opened"]
    per_socket = (figures["rss"] - before) * 1024 / max(sockets, 1)
    socket_minutes = sockets * idle / 60
    busy = figures["asked"]
    return [
        ("sockets opened / failed / still open after idling",
         f"{sockets} / {failed} / {still} (opened in {opening:.1f} s)"),
        ("RSS before opening -> after idling", f"{before:.0f} -> {figures['rss']:.0f} MiB"),
        ("memory per socket", f"{per_socket:.1f} KiB"),
        ("CPU per idle socket-minute",
         f"{figures['cpu'] / max(socket_minutes, 1e-9) * 1e3:.3f} ms "
         f"({figures['cpu']:.2f} s over {idle:.0f} s)"),
        ("100 turns, nothing else open: first status p50 / p99",
         f"{alone['p50']:.0f} / {alone['p99']:.0f} ms, turn p99 {alone['turn_p99']:.2f} s, "
         f"{alone['complete']}/{ASKED} complete"),
        ("100 turns on idle sockets: first status p50 / p99",
         f"{busy['p50']:.0f} / {busy['p99']:.0f} ms, turn p99 {busy['turn_p99']:.2f} s, "
         f"{busy['complete']}/{figures['still']} complete"),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=float, default=300, help="seconds the sockets idle")
    parser.add_argument("--counts", default="1000,2000,5000")
    parser.add_argument("--systems", default="glassbox,chainlit")
    options = parser.parse_args()
    counts = [int(c) for c in options.counts.split(",")]
    # Each socket is a descriptor in this process and in the server (which inherits it).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(counts) * 2 + 1000
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(wanted, hard)), hard))
    print(f"machine: {machine()}; load average at start: {os.getloadavg()}")
    print(f"idle {options.idle:.0f} s; model: {' '.join(PACE)}")
    systems: dict[str, type[GlassboxSockets | ChainlitSockets]] = {
        "glassbox": GlassboxSockets,
        "chainlit": ChainlitSockets,
    }
    for name in options.systems.split(","):
        system = systems[name]()
        for count in counts:
            with (
                tempfile.TemporaryDirectory() as work,
                fake_llm(*PACE) as llm,
                system.serve(llm, Path(work), count) as pid,
            ):
                report(
                    f"{system.name}, {count} quiet sockets",
                    measure(system, pid, count, options.idle),
                )


if __name__ == "__main__":
    main()
