"""The turn API as a program uses it, through Django's ASGI handler."""

from __future__ import annotations

import json

from django.test import AsyncClient

from tests.support import QUESTION


async def client_for(user) -> AsyncClient:
    client = AsyncClient()
    if user is not None:
        await client.aforce_login(user)
    return client


def logged_in(client, user):
    """Django's test client (sync), logged in as user unless user is None."""
    if user is not None:
        client.force_login(user)
    return client


def turns_url(conversation) -> str:
    return f"/api/conversations/{conversation.pk}/messages/"


async def ask(client, conversation, stream: bool = True, **body):
    headers = {"Accept": "text/event-stream"} if stream else {}
    return await client.post(
        turns_url(conversation),
        {"content": QUESTION, **body},
        content_type="application/json",
        headers=headers,
    )


def parse_sse(text: str) -> list[dict]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        event = json.loads(lines["data"])
        assert lines["event"] == event["type"]
        events.append(event)
    return events


async def sse_events(response, *, held=None) -> list[dict]:
    """The stream's events. With `held` (a demo-model gate holding the turn), the gate opens
    once the first event is in: the stream follows the turn live from its start instead of
    replaying one that ran ahead of it."""
    assert response["Content-Type"] == "text/event-stream"
    chunks = aiter(response.streaming_content)
    body = [await anext(chunks)]
    if held is not None:
        held.open()
    body += [chunk async for chunk in chunks]
    return parse_sse(b"".join(body).decode())


async def streamed_json(response):
    """The one JSON document of a response streamed once the turn is over."""
    assert response["Content-Type"] == "application/json"
    return json.loads(b"".join([chunk async for chunk in response.streaming_content]))
