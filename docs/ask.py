"""Asks Glassbox a question over its REST API and prints the agent's work as it happens.

    GLASSBOX_TOKEN=… python docs/ask.py http://127.0.0.1:8000 "How do I negotiate my salary?"

Standard library only. It creates a conversation, posts the question with
`Accept: text/event-stream`, and prints each status line the moment it arrives, then the answer.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
import uuid


def call(base: str, path: str, body: dict, accept: str = "application/json"):
    request = urllib.request.Request(
        base.rstrip("/") + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Token {os.environ['GLASSBOX_TOKEN']}",
            "Content-Type": "application/json",
            "Accept": accept,
        },
    )
    return urllib.request.urlopen(request)


def events(response):
    """Server-sent events, one JSON object at a time, as they arrive."""
    for raw in response:
        line = raw.decode().rstrip("\n")
        if line.startswith("data: "):
            yield json.loads(line[len("data: ") :])


def main(base: str, question: str) -> int:
    conversation = json.load(call(base, "/api/conversations/", {"title": question[:80]}))
    stream = call(
        base,
        f"/api/conversations/{conversation['id']}/messages/",
        {"content": question, "client_id": str(uuid.uuid4())},
        accept="text/event-stream",
    )
    answer = []
    for event in events(stream):
        if event["type"] == "status":
            print(f"{event['icon']} {event['message']}", flush=True)
        elif event["type"] == "text":
            answer.append(event["content"])
        elif event["type"] == "done":
            print()
            print("".join(answer))
            return 0 if event["state"] == "complete" else 1
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], " ".join(sys.argv[2:]) or "How do I negotiate my salary?"))
