"""A test MCP server's process as Glassbox starts it: `python -I -S forked.py SOCKET MODULE
ARGS...` asks the zygote (tests/support/zygote.py) for a server forked from the SDK it has
imported already, hands it this process's standard input, output and error, and lives as long
as the server does: it forwards the signals it is sent and exits as the server did. Only the
standard library, without site-packages: it starts in a few milliseconds."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def main() -> None:
    path, module, *args = sys.argv[1:]
    # A signal that comes before the server's pid is known is held for it, not lost.
    server = 0
    held: list[int] = []

    def forward(got: int, _frame: object) -> None:
        if server:
            _forward(server, got)
        else:
            held.append(got)

    for number in FORWARDED:
        signal.signal(number, forward)
    zygote = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    zygote.connect(path)
    request = {
        "module": module,
        "args": args,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "asker": os.getpid(),
    }
    socket.send_fds(zygote, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    # The server holds them now: its client must see their end when the server's comes.
    quiet = os.open(os.devnull, os.O_RDWR)
    os.dup2(quiet, 0)
    os.dup2(quiet, 1)
    answers = zygote.makefile("rb")
    server = int(answers.readline() or 0)
    if not server:
        sys.exit("the zygote did not start the server")
    for got in held:
        _forward(server, got)
    said = answers.readline()
    if not said:
        sys.exit(1)  # the zygote is gone: the server ends with this process
    status = int(said)
    if os.WIFSIGNALED(status):
        ended = os.WTERMSIG(status)
        signal.signal(ended, signal.SIG_DFL)
        os.kill(os.getpid(), ended)
    sys.exit(os.waitstatus_to_exitcode(status))


def _forward(server: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(server, number)


if __name__ == "__main__":
    main()
