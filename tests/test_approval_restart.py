"""A pause outlives its process: a turn waits for approval, the server is killed and another
process starts on the same database, the owner approves there, and the answer completes."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.servers import api, demo_token, manage, serve, start_daphne

pytestmark = [pytest.mark.server, pytest.mark.own_site]


def test_a_turn_waiting_for_approval_survives_a_restart(tmp_path):
    with serve(tmp_path) as first:
        token = demo_token(first.env)
        conversation = json.load(api(first, token, "/api/conversations/", {}))["id"]
        question = {"content": "Email advisor@example.com: can we meet on Tuesday?"}
        path = f"/api/conversations/{conversation}/messages/"
        waiting = None
        with api(first, token, path, question, accept="text/event-stream") as stream:
            for raw in stream:
                if raw.startswith(b"data: "):
                    event = json.loads(raw[6:])
                    if event.get("state") == "waiting":
                        waiting = event
                        break
        assert waiting is not None and waiting["tool"] == "send_email"
        first.process.kill()  # no drain, no goodbye: the pause is all in the database
        first.process.wait(10)
        second = start_daphne(first.env)
        try:
            decided = json.load(
                api(second, token, f"/api/conversations/{conversation}/approvals/"
                    f"{waiting['call_id']}/", {"decision": "approve"})
            )  # fmt: skip
            assert (decided["decision"], decided["by"]) == ("approve", "demo")
            answer = _finished_answer(second, token, conversation)
        finally:
            second.stop()

    assert answer["state"] == "complete"
    assert "the email to advisor@example.com is in the outbox" in answer["content"]
    kinds = [e["type"] for e in answer["feed"]["events"]]
    assert kinds.count("decision") == 1 and kinds.count("tool_call") == 1
    count = "from chat.models import OutboxEmail; print(OutboxEmail.objects.count())"
    sent = manage(first.env, "shell", "-c", count)
    assert sent.strip().splitlines()[-1] == "1"


def _finished_answer(server, token, conversation) -> dict:
    """The answer once its turn is over (another process runs it: polled, within a bound)."""
    deadline = time.monotonic() + 30
    while True:
        messages = json.load(api(server, token, f"/api/conversations/{conversation}/"))["messages"]
        answer = messages[-1]
        if answer["state"] not in ("streaming", "waiting") or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)
