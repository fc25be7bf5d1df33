"""The protocols' own clients under Node (clients/: @ag-ui/client and the `ai` package, pinned):
following a live server's turn themselves, or reading a turn's raw streams; what the client
had and rebuilt out."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import Server, api
from tests.support.standard_streams import parse_frames

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
NODE = CLIENTS / "node_modules" / ".bin" / "node"
INSTALLED = CLIENTS / "node_modules" / ".installed"


def ensure_installed() -> None:
    """`make clients` once (under a lock: test processes share the folder); skipped without
    npm unless REQUIRE_NODE_CLIENTS=1 makes that a failure."""
    if INSTALLED.exists() and NODE.exists():
        return
    if shutil.which("npm") is None:
        if os.environ.get("REQUIRE_NODE_CLIENTS") == "1":
            pytest.fail("REQUIRE_NODE_CLIENTS=1 but npm is missing")
        pytest.skip("needs npm for the stream clients (make clients)")
    with open(CLIENTS / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not INSTALLED.exists():
            subprocess.run(
                ["make", "clients"], cwd=CLIENTS.parent, check=True, capture_output=True
            )


def read_with_client(wire: str, connections: list[str]) -> dict[str, Any]:
    """What the standard's client rebuilds from these connections' raw event streams."""
    done = subprocess.run(
        [str(NODE), str(CLIENTS / "read_turn.mjs")],
        input=json.dumps({"wire": wire, "connections": connections}),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def read_each_with_client(wire: str, reads: list[list[str]]) -> list[dict[str, Any]]:
    """What the standard's client rebuilds from each read (its connections' raw streams),
    all in one Node process."""
    done = subprocess.run(
        [str(NODE), str(CLIENTS / "read_turn.mjs")],
        input=json.dumps({"wire": wire, "reads": reads}),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def sse_blocks(text: str) -> list[str]:
    """A raw server-sent event stream, one block (a frame) each, as it came."""
    return [f"{block}\n\n" for block in text.split("\n\n") if block]


def block_id(block: str) -> str | None:
    return next((line[4:] for line in block.splitlines() if line.startswith("id: ")), None)


def block_type(block: str) -> str:
    data = next(line[6:] for line in block.splitlines() if line.startswith("data: "))
    return "[DONE]" if data == "[DONE]" else json.loads(data)["type"]


def follow_live(
    wire: str,
    url: str,
    token: str,
    *,
    drop_after: str,
    dropped: Callable[[], None],
    resumed: Callable[[], None],
) -> dict[str, Any]:
    """The standard's client following a live turn at `url` itself (clients/follow_turn.mjs):
    it lets go right after the first frame of type `drop_after`, `dropped()` runs, it resumes
    with Last-Event-ID, and `resumed()` runs once the resumed connection gave a frame. What
    it had on each connection and what it rebuilt."""
    options = {"wire": wire, "url": url, "token": token, "dropAfter": drop_after}
    node = subprocess.Popen(
        [str(NODE), str(CLIENTS / "follow_turn.mjs"), json.dumps(options)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # A client that never says what it waits for must not hang the tests.
    watchdog = threading.Timer(60, node.kill)
    watchdog.start()
    try:
        assert node.stdin is not None and node.stdout is not None
        for line in node.stdout:
            said = json.loads(line)
            if "dropped" in said:
                dropped()
                node.stdin.write("resume\n")
                node.stdin.flush()
            elif "resumed" in said:
                resumed()
            elif "result" in said:
                return said["result"]
        assert node.stderr is not None
        raise AssertionError(f"the client ended without a result: {node.stderr.read()}")
    finally:
        watchdog.cancel()
        node.kill()
        node.wait()


def start_turn(server: Server, token: str, question: str) -> tuple[str, int]:
    """Asks on a new conversation of a live server: the conversation's id and the answer's,
    as soon as the turn has begun (the turn runs on whatever the asking client does)."""
    conversation = json.load(api(server, token, "/api/conversations/", {}))["id"]
    path = f"/api/conversations/{conversation}/messages/"
    with api(server, token, path, {"content": question}, accept="text/event-stream") as stream:
        for raw in stream:
            if raw.startswith(b"data: "):
                event = json.loads(raw[6:])
                if event["type"] == "turn":
                    return conversation, int(event["message_id"])
    raise AssertionError("the turn did not begin")


def stored_answer(server: Server, token: str, conversation: str) -> dict[str, Any]:
    """The conversation's last answer as the API gives it: its text, state and feed."""
    return json.load(api(server, token, f"/api/conversations/{conversation}/"))["messages"][-1]


@dataclass
class Follower:
    """A client that never lets go, reading a stream in a thread of its own: `frames` as
    they come, `started` once the first arrived, `finished` at the stream's end."""

    frames: list[tuple[str | None, Any]] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, wanted: Callable[[Any], bool], timeout: float = 30) -> None:
        """Returns once a frame whose data is `wanted` arrived."""
        with self.arrived:
            found = self.arrived.wait_for(
                lambda: any(isinstance(d, dict) and wanted(d) for _, d in self.frames), timeout
            )
        assert found, "the frame never came"


def follow_in_thread(server: Server, token: str, path: str) -> Follower:
    """Starts following the stream at `path` from its start; returns once it is connected
    and has its first frame (so whatever the server sends from then on, it has live)."""
    follower = Follower()

    def read() -> None:
        try:
            with api(server, token, path, accept="text/event-stream") as response:
                block = ""
                for raw in response:
                    line = raw.decode()
                    if line != "\n":
                        block += line
                        continue
                    with follower.arrived:
                        follower.frames += parse_frames(block)
                        follower.arrived.notify_all()
                    follower.started.set()
                    block = ""
        finally:
            follower.started.set()
            follower.finished.set()

    threading.Thread(target=read, daemon=True).start()
    assert follower.started.wait(60) and follower.frames, "the follower got nothing"
    return follower
