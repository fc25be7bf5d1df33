"""The test MCP servers' common start: a process that has imported the `mcp` SDK once and forks
a server for each process that asks (tests/support/forked.py), so a server starts in
milliseconds instead of the second of CPU the SDK's import costs every new process.

Run as `python -m tests.support.zygote SOCKET` by tests.support.mcp. A request is one line of
JSON (the module to run, its arguments, environment and folder, the asking process's pid) with
the asker's standard input, output and error; the answer is two lines: the server's pid, then
its wait status once it ends. The fork runs the module as `python -m` would, in the asker's
environment and folder, and ends with the asker: it dies with it, and the asker forwards the
signals it is sent.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
import traceback

# What every test server imports: paid once, here.
PRELOADED = ("mcp", "mcp.server.mcpserver", "mcp.server.apps", "mcp_types", "anyio", "pydantic")
MOST_FDS = 3


def main() -> None:
    path = sys.argv[1]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    # Listening before the imports: who asks meanwhile waits in the backlog, not refused.
    listener.listen(128)
    for module in PRELOADED:
        __import__(module)
    parent = os.pidfd_open(os.getppid())
    woken, wake = socket.socketpair()
    woken.setblocking(False)
    wake.setblocking(False)
    signal.set_wakeup_fd(wake.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    waiting: dict[int, socket.socket] = {}
    chosen = selectors.DefaultSelector()
    chosen.register(listener, selectors.EVENT_READ, "ask")
    chosen.register(woken, selectors.EVENT_READ, "child")
    chosen.register(parent, selectors.EVENT_READ, "parent")
    while True:
        for key, _ in chosen.select():
            if key.data == "parent":
                return  # the test process that started this one is gone
            if key.data == "ask":
                asker, _ = listener.accept()
                # The fork closes the zygote's sockets, other askers' among them: an asker
                # whose zygote is gone must see the end of its socket, not wait on a copy.
                pid = _serve(asker, listener, woken, wake, *waiting.values())
                if pid:
                    waiting[pid] = asker
                else:
                    asker.close()
            else:
                _drain(woken)
        _reap(waiting)


def _drain(woken: socket.socket) -> None:
    with contextlib.suppress(BlockingIOError):
        while woken.recv(512):
            pass


def _reap(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        asker = waiting.pop(pid, None)
        if asker is not None:
            with contextlib.suppress(OSError):  # the asker may be gone already
                asker.sendall(f"{status}\n".encode())
            asker.close()


def _serve(asker: socket.socket, *closed: socket.socket) -> int:
    """Forks the server asked for; its pid, or 0 when the request could not be read."""
    asker.settimeout(10)
    try:
        request, fds = _receive(asker)
    except (OSError, ValueError):
        return 0
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            asker.sendall(f"{pid}\n".encode())
        return pid
    try:
        for own in closed:
            own.close()
        asker.close()
        _run(request, fds)
    finally:
        os._exit(1)  # whatever happened, the fork never goes back to the zygote's loop


def _receive(asker: socket.socket) -> tuple[dict, list[int]]:
    fds = array.array("i")
    data, ancillary, _flags, _address = asker.recvmsg(65536, socket.CMSG_SPACE(MOST_FDS * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    while not data.endswith(b"\n"):
        more = asker.recv(65536)
        if not more:
            raise ValueError("the request ended early")
        data += more
    if len(fds) != MOST_FDS:
        raise ValueError("a request comes with its standard input, output and error")
    return json.loads(data), list(fds)


def _run(request: dict, fds: list[int]) -> None:
    """In the fork: becomes the asker's server and exits with its status."""
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    _die_with(request["asker"])
    sys.argv = [request["module"], *request["args"]]
    code = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else (0 if ended.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    os._exit(code)


def _die_with(asker: int) -> None:
    """Ends this server as soon as its asker ends, killed or not: no server outlives the
    process its client started. (It keeps the zygote's CPU priority: the priority Glassbox
    gives its servers is tested on a server started unforked.)"""
    try:
        watched = os.pidfd_open(asker)
    except ProcessLookupError:
        os._exit(1)

    def watch() -> None:
        ended = selectors.DefaultSelector()
        ended.register(watched, selectors.EVENT_READ)
        ended.select()
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="die-with-asker").start()


if __name__ == "__main__":
    main()
