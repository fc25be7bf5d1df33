"""Serves Glassbox with Daphne on uvloop, in one process or one per core.

    python -m project.serve -b 0.0.0.0 -p 8000 [--workers N|auto] [other Daphne options]
                            [application, by default project.asgi:application]

uvloop runs the event loop under Daphne's Twisted reactor: the same work for about a fifth
less CPU than asyncio's own loop. With `--workers N` (`auto`: one per core) this process
opens the listening socket and starts N Daphne processes that accept from it; a worker that
dies is started again, and SIGTERM or SIGINT reach every worker: on SIGTERM they finish their
running turns first (chat.turns.shutdown). Workers share their turns' events through the
Redis channel layer, so more than one needs REDIS_URL.

A burst of sockets waits instead of being dropped: the listening socket queues
GLASSBOX_LISTEN_BACKLOG connections (Twisted's own default is 50), and a handshake may wait
GLASSBOX_WEBSOCKET_CONNECT_TIMEOUT seconds for its socket's opening read (Daphne's default,
5 s, dropped 937 of 1,000 sockets arriving within 2 s at two workers on a busy machine: each
came back, and its read ran again; docs/benchmarks.md, "A burst")."""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

from project import heap
from project.env import env_int
from project.unused import HIGHLIGHTING, TLS, WAMP_AUTH, leave_out, load_on_use, speaks_tls

APPLICATION = "project.asgi:application"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m project.serve", add_help=False)
    parser.add_argument("--workers", default="1")
    parser.add_argument("-b", "--bind", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=8000)
    options, daphne_args = parser.parse_known_args(argv)
    if not any(":" in arg and not arg.startswith("-") for arg in daphne_args):
        daphne_args.append(APPLICATION)
    workers = (os.cpu_count() or 1) if options.workers == "auto" else int(options.workers)
    if workers < 1:
        parser.error("--workers must be at least 1")
    if not any(arg.startswith("--websocket_connect_timeout") for arg in daphne_args):
        seconds = env_int("GLASSBOX_WEBSOCKET_CONNECT_TIMEOUT", 30)
        daphne_args = ["--websocket_connect_timeout", str(seconds), *daphne_args]
    backlog = env_int("GLASSBOX_LISTEN_BACKLOG", 1024)
    if workers == 1 or "--fd" in daphne_args:
        if "--fd" not in daphne_args:
            daphne_args = [*listening_on(options.bind, options.port, backlog), *daphne_args]
        return serve(daphne_args)
    if not os.environ.get("REDIS_URL"):
        parser.error("--workers above 1 needs REDIS_URL: the processes share turns through Redis")
    return supervise(workers, options.bind, options.port, daphne_args, backlog)


def listening_on(host: str, port: int, backlog: int) -> list[str]:
    """Daphne's endpoint for `-b host -p port`, with a listen backlog of `backlog`."""
    interface = host.strip("[]").replace(":", r"\:")
    return ["-e", f"tcp:port={port}:interface={interface}:backlog={backlog}"]


def serve(daphne_args: list[str]) -> int:
    """One Daphne process, on uvloop unless GLASSBOX_UVLOOP=0."""
    if os.environ.get("GLASSBOX_UVLOOP", "1") != "0":
        import uvloop

        # Daphne creates its event loop when daphne.server is imported, from this policy.
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    leave_out(HIGHLIGHTING)
    if not speaks_tls(daphne_args):
        leave_out(TLS)
    load_on_use(WAMP_AUTH)  # after TLS: its package's imports would load pyOpenSSL
    from project import debug_lines, paced_checks, prompt_writes

    debug_lines.install()
    prompt_writes.install()
    paced_checks.install()
    heap.keep()
    from daphne.cli import CommandLineInterface

    CommandLineInterface().run([*daphne_args])
    return 0


def supervise(workers: int, host: str, port: int, daphne_args: list[str], backlog: int) -> int:
    listening = socket.create_server((host, port), backlog=backlog, reuse_port=False)
    listening.set_inheritable(True)
    fd = listening.fileno()
    command = [sys.executable, "-m", "project.serve", "--fd", str(fd), *daphne_args]
    stopping = False

    def start() -> subprocess.Popen:
        return subprocess.Popen(command, pass_fds=(fd,), preexec_fn=_stop_with_parent)

    processes = [start() for _ in range(workers)]
    # The bound port, which port 0 leaves to the kernel.
    bound = listening.getsockname()[1]
    print(f"Glassbox: {workers} Daphne processes on http://{host}:{bound}/", flush=True)

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for process in processes:
            if process.poll() is None:
                process.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        for n, process in enumerate(processes):
            if process.poll() is not None and not stopping:
                print(f"Glassbox: worker {process.pid} exited ({process.returncode}); "
                      "starting another", file=sys.stderr, flush=True)  # fmt: skip
                processes[n] = start()
        time.sleep(0.5)
    for process in processes:
        process.wait()
    listening.close()
    return 0


def _stop_with_parent() -> None:
    """A worker gets SIGTERM if the supervisor dies (Linux): none is left holding the port."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: a supervisor killed outright leaves its workers running


PR_SET_PDEATHSIG = 1

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
