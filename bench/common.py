"""What every benchmark needs: the paced fake LLM, a real Daphne serving Glassbox, logged-in
WebSocket clients in this (separate) process, and honest statistics."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.ports import accepting as accepting  # noqa: E402
from tests.support.ports import free_port  # noqa: E402
from tests.support.servers import login, manage, serve, start_daphne  # noqa: E402

BENCH_LIMITS = {"GLASSBOX_TURNS_PER_MINUTE": "1000000", "GLASSBOX_MAX_CONCURRENT_TURNS": "100000"}


def machine() -> str:
    memory = int(Path("/proc/meminfo").read_text().split()[1]) // 1024 // 1024
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {memory} GiB, "
        f"Python {platform.python_version()}"
    )


@contextmanager
def fake_llm(*args: str):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "fake_llm.py"), "--port", str(port), *args],
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.readline()  # listening
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def glassbox(work: Path, llm_url: str, *, asgi: str = "project.asgi:application", **settings):
    env = {
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": llm_url,
        "GLASSBOX_MODEL": "bench",
        "GLASSBOX_PROVIDER_RETRIES": "0",
        "LOG_LEVEL": "ERROR",
        **BENCH_LIMITS,
        **settings,
    }
    with serve(work, **env) as server:
        if asgi != "project.asgi:application":
            server.stop()
            server = start_daphne(server.env, asgi=asgi)
        try:
            yield server
        finally:
            server.stop()


def conversations(server, count: int) -> tuple[list[str], str]:
    """`count` new conversations of the demo user, and its session cookie."""
    first, cookies = login(server.url)
    code = (
        "import json; from chat.models import Conversation; "
        "from django.contrib.auth.models import User; u = User.objects.get(username='demo'); "
        "made = [str(Conversation.objects.create(owner=u).pk) for _ in range(COUNT)]; "
        "print(json.dumps(made))"
    ).replace("COUNT", str(count - 1))
    others = json.loads(manage(server.env, "shell", "-c", code).strip().splitlines()[-1])
    return [first, *others], cookies


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time every core of the machine spent on anything but idling, in seconds."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def peak_memory_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(p) - 1]


def report(title: str, rows: list[tuple[str, str]]) -> None:
    print(f"\n## {title}")
    for name, value in rows:
        print(f"  {name:<52} {value}")
    sys.stdout.flush()


def now() -> float:
    return time.monotonic()


REJECTED_HANDSHAKES: list[str] = []


async def turn_over_socket(
    server,
    conversation: str,
    cookies: str,
    question: str,
    *,
    pause_s: float = 0,
    asked: list[int] | None = None,
) -> list:
    """Asks over a JSON socket, `pause_s` after it opened (a person reading the page first);
    every event with the CLOCK_MONOTONIC time it arrived (the question's own is appended to
    `asked`, if given). A handshake the server refuses or drops (a burst of hundreds
    overflows Daphne's listen backlog or its connect timeout) is counted and retried;
    nothing was asked yet."""
    import websockets
    from websockets.typing import Subprotocol

    url = server.url.replace("http", "ws") + f"/ws/c/{conversation}/"
    for _ in range(10):
        try:
            socket = await websockets.connect(
                url,
                additional_headers={"Cookie": cookies, "Origin": server.url},
                subprotocols=[Subprotocol("glassbox.json")],
                max_size=None,
                open_timeout=60,
            )
            break
        except (websockets.InvalidStatus, websockets.InvalidMessage, OSError) as problem:
            REJECTED_HANDSHAKES.append(f"{type(problem).__name__}: {problem}")
            await asyncio.sleep(0.5 + random.random())
    else:
        raise RuntimeError(f"ten handshakes in a row failed, the last: {REJECTED_HANDSHAKES[-1]}")
    received = []
    async with socket:
        await asyncio.sleep(pause_s)
        if asked is not None:
            asked.append(time.monotonic_ns())
        await socket.send(json.dumps({"message": question}))
        while True:
            event = json.loads(await socket.recv())
            received.append((time.monotonic_ns(), event))
            if event["type"] in ("done", "error"):
                return received


def django_with_fresh_database(work: Path, **settings: str) -> None:
    """Sets Django up in this process on a new SQLite file, migrated and seeded."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
            "LOG_LEVEL": "ERROR",
            "GLASSBOX_DEMO_DELAY": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
            **BENCH_LIMITS,
            **settings,
        }
    )
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("seed_demo", verbosity=0)


@contextmanager
def redis_url():
    """REDIS_URL when given; otherwise a throwaway Debian redis-server, or None."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    if shutil.which("redis-server") is None:
        yield None
        return
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(50):
            if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout:
                break
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def profiled(pids: list[int], tag: str = ""):
    """With BENCH_PROFILE=<prefix>, py-spy samples each server into <prefix>-<tag or pid>.txt
    (collapsed stacks: for flamegraph.pl, speedscope or bench/profile_split.py). Yields the
    files written."""
    prefix = os.environ.get("BENCH_PROFILE")
    spy = Path(sys.executable).with_name("py-spy")
    spies, outputs = [], []
    for pid in pids if prefix else []:
        outputs.append(Path(f"{prefix}-{tag or pid}.txt"))
        command = [str(spy), "record", "--pid", str(pid), "--rate", "250", "--format", "raw",
                   "--nonblocking", "-o", str(outputs[-1])]  # fmt: skip
        spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
    time.sleep(1 if spies else 0)
    try:
        yield outputs
    finally:
        for process in spies:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
