"""An MCP server's questions as a test meets them on a JSON socket: waiting for a card,
answering it as a page or a program would."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import connections
from django.urls import reverse
from django.utils import timezone


async def json_until_question(socket, limit: float = 20) -> tuple[list[dict], dict]:
    """A turn's events up to the first card that waits for an answer, and that card."""
    events = []
    async with asyncio.timeout(limit):
        while True:
            events.append(json.loads(await socket.receive_from(timeout=limit)))
            if events[-1]["type"] == "questions":
                waiting = [q for q in events[-1]["questions"] if q["state"] == "waiting"]
                if waiting:
                    return events, waiting[0]


async def json_until(
    socket, kind: str, limit: float = 20, passed: list[dict] | None = None
) -> dict:
    """The next event of this type; those before it go to `passed` when given (the turn
    may go on streaming before the awaited frame arrives)."""
    async with asyncio.timeout(limit):
        while True:
            event = json.loads(await socket.receive_from(timeout=limit))
            if event["type"] == kind:
                return event
            if passed is not None:
                passed.append(event)


async def answer(socket, card: dict, action: str = "accept", **values) -> None:
    """As a program answers: the values in one `answer` object."""
    await socket.send_to(
        text_data=json.dumps({"elicitation": card["id"], "action": action, "answer": values})
    )


async def answer_as_page(socket, card: dict, **values) -> None:
    """As the card's form sends it over htmx's ws-send: every value a string."""
    fields = {f"answer.{name}": str(value) for name, value in values.items()}
    await socket.send_to(
        text_data=json.dumps(
            {
                "elicitation": card["id"],
                "action": "accept",
                "HEADERS": {"HX-Request": "true"},
                **fields,
            }
        )
    )


async def answer_without_javascript(client, conversation, card: dict, **values: str):
    """As the card's form posts from the page with no JavaScript, on Django's test `client`;
    the view's database connection (its thread is the test's executor) is closed after it,
    as a request's would be. The response."""
    form = {"elicitation": card["id"], "action": "accept"}
    form |= {f"answer.{name}": value for name, value in values.items()}

    def post():
        try:
            return client.post(reverse("chat:conversation_act", args=[conversation.pk]), form)
        finally:
            connections.close_all()

    return await sync_to_async(post)()


async def waiting_questions(conversation, count: int = 1, **row) -> list:
    """Questions a running turn's server asked, as chat.asks.elicitations writes them,
    waiting for an answer (a form with one text field `name`, unless `row` says otherwise)."""
    from activity.writing.feeds import open_feed
    from chat.models import Elicitation, Message

    await Message.objects.acreate(conversation=conversation, role="user", content="Go on")
    feed = await sync_to_async(open_feed)(
        owner_id=conversation.owner_id, conversation_id=conversation.pk, language="en"
    )
    answer = await Message.objects.acreate(
        conversation=conversation, role="assistant", state=Message.State.STREAMING, feed=feed
    )
    fields = {
        "call_id": "call_1",
        "server": "surveys",
        "mode": "form",
        "message": "Who?",
        "requested_schema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    return [
        await Elicitation.objects.acreate(
            answer=answer, deadline=timezone.now() + timedelta(minutes=2), **(fields | row)
        )
        for _ in range(count)
    ]
