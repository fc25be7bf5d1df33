"""A real Daphne process killed with SIGKILL mid-turn: the turn is recovered, not lost."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from tests.support.servers import api, demo_token, serve, start_daphne

pytestmark = [pytest.mark.server, pytest.mark.own_site]


class Follower(threading.Thread):
    """Reads a turn's server-sent events until a few pieces of answer text have arrived."""

    def __init__(self, server, token, path):
        super().__init__(daemon=True)
        self.server, self.token, self.path = server, token, path
        self.seen: list[dict] = []
        self.writing = threading.Event()

    def run(self):
        body = {"content": "How do I negotiate my salary?"}
        try:
            stream = api(self.server, self.token, self.path, body, accept="text/event-stream")
            for raw in stream:
                if raw.startswith(b"data: "):
                    self.seen.append(json.loads(raw[6:]))
                    # Enough text for a heartbeat (every 0.2 s here) to have saved some.
                    if len([e for e in self.seen if e["type"] == "text"]) >= 15:
                        self.writing.set()
        except OSError:
            pass  # the server died under us, as intended


def killed_then_read(server, follower, token: str, conversation_id: str) -> dict:
    """SIGKILLs `server` (no cleanup of any kind runs), then reads the conversation from a
    new process on the same database until it has recovered the dead process's turn: each
    read closes a turn that has missed four heartbeats, and leaves one that is only late."""
    server.process.kill()
    server.process.wait(timeout=10)
    follower.join(timeout=10)
    assert not follower.is_alive()
    second = start_daphne(server.env)
    deadline = time.monotonic() + 20
    try:
        while True:
            data = json.load(api(second, token, f"/api/conversations/{conversation_id}/"))
            if data["messages"][-1]["state"] != "streaming":
                return data
            assert time.monotonic() < deadline, data["messages"][-1]
            time.sleep(0.05)  # between two reads: the heartbeats are 0.2 s apart
    finally:
        second.stop()


def test_a_turn_whose_process_is_killed_is_marked_interrupted_with_its_work_kept(tmp_path):
    settings = {"GLASSBOX_DEMO_DELAY": "0.03", "GLASSBOX_HEARTBEAT_SECONDS": "0.2"}
    with serve(
        tmp_path, (), None, mcp_opened=True, seeded=False, terminal=False, **settings
    ) as first:
        token = demo_token(first.env)
        conversation = json.load(api(first, token, "/api/conversations/", {"title": "crash"}))
        path = f"/api/conversations/{conversation['id']}/messages/"
        reader = Follower(first, token, path)
        reader.start()
        assert reader.writing.wait(timeout=20), reader.seen
        seen = reader.seen
        data = killed_then_read(first, reader, token, conversation["id"])

    _, answer = data["messages"]
    assert answer["state"] == "interrupted"
    streamed = "".join(e["content"] for e in seen if e["type"] == "text")
    assert answer["content"] and streamed.startswith(answer["content"][:8])
    feed = answer["feed"]
    assert feed["state"] == "interrupted"
    lines = [(e["icon"], e["message"]) for e in feed["events"] if e["type"] == "status"]
    assert lines[-1] == ("⚠️", "Interrupted: the server stopped while working")
    assert ("📄", "Found 3 documents") in lines
    # Those written before the crash in order; the ⚠️ line above any the process may have
    # shown without writing it.
    seqs = [e["seq"] for e in feed["events"]]
    assert seqs[:-1] == list(range(1, len(seqs))) and seqs[-1] > seqs[-2]

    # The conversation is usable again: a new question runs to the end.
    for server in [start_daphne(first.env)]:
        try:
            done = api(server, token, path, {"content": "Tell me a joke"})
            assert json.load(done)["state"] == "complete"
        finally:
            server.stop()


class CallWatcher(threading.Thread):
    """Asks over SSE and waits for the turn's tool call to be announced."""

    def __init__(self, server, token, path, question):
        super().__init__(daemon=True)
        self.server, self.token, self.path, self.question = server, token, path, question
        self.seen: list[dict] = []
        self.called = threading.Event()

    def run(self):
        try:
            body = {"content": self.question}
            stream = api(self.server, self.token, self.path, body, accept="text/event-stream")
            for raw in stream:
                if raw.startswith(b"data: "):
                    self.seen.append(json.loads(raw[6:]))
                    if self.seen[-1]["type"] == "tool_call":
                        self.called.set()
        except OSError:
            pass  # the server died under us, as intended


def test_a_server_killed_while_an_mcp_tool_runs_keeps_the_call_and_marks_its_outcome_unknown(
    tmp_path,
):
    # The demo MCP server's survey tool, slowed so that it is surely running at the kill.
    surveys = {
        "name": "surveys",
        "command": sys.executable,
        "args": ["-m", "chat.agent.mcp.demo_server"],
        "env": {"GLASSBOX_DEMO_MCP_DELAY": "30"},
    }
    settings = {
        "GLASSBOX_HEARTBEAT_SECONDS": "0.2",
        "GLASSBOX_MCP_SERVERS": json.dumps([surveys]),
    }
    with serve(
        tmp_path, (), None, mcp_opened=True, seeded=False, terminal=False, **settings
    ) as first:
        token = demo_token(first.env)
        conversation = json.load(api(first, token, "/api/conversations/", {"title": "crash"}))
        path = f"/api/conversations/{conversation['id']}/messages/"
        watcher = CallWatcher(first, token, path, "Compare five salary surveys for an engineer")
        watcher.start()
        assert watcher.called.wait(timeout=30), watcher.seen
        (announced,) = [e for e in watcher.seen if e["type"] == "tool_call"]
        data = killed_then_read(first, watcher, token, conversation["id"])  # while the tool runs

    _, answer = data["messages"]
    assert answer["state"] == "interrupted"
    events = answer["feed"]["events"]
    (call,) = [e for e in events if e["type"] == "tool_call"]
    assert call["tool"] == "surveys__compare_salary_surveys" == announced["tool"]
    assert call["arguments"] == announced["arguments"] and call["arguments"]["role"]
    assert not [e for e in events if e["type"] == "tool_result"]
    lines = [(e["icon"], e["message"]) for e in events if e["type"] == "status"]
    assert lines[-2:] == [
        ("❔", "Outcome unknown: the server stopped while surveys__compare_salary_surveys ran"),
        ("⚠️", "Interrupted: the server stopped while working"),
    ]
