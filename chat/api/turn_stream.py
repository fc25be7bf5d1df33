"""Running a turn for a program: the same runner the socket uses, followed through the
conversation's channel-layer group, so browser tabs watch an API-started turn live."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from activity.events import Done, to_json
from activity.models import FeedPreferences
from chat.broadcast import send_turn_started
from chat.follow import TurnFollower
from chat.models import Conversation, Message
from chat.selectors import amessage_with_feed
from chat.services import StartedTurn
from chat.turns import turn_launch


async def turn_events(conversation: Conversation, turn: StartedTurn) -> AsyncIterator[dict]:
    """Launches a turn saved by turn_start (or, when it was joined, replays it so far) and
    yields its JSON events up to `done`."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    # Join the group before the turn is launched or read back, so no event falls between.
    await layer.group_add(conversation.group_name, channel)
    try:
        answer_id = turn.answer.pk
        follower = TurnFollower()
        yield {"type": "turn", "question_id": turn.question.pk, "message_id": answer_id}
        if turn.joined:
            prefs = await FeedPreferences.aprefs_for(conversation.owner_id)
            stored = await amessage_with_feed(answer_id, prefs)
            follower.snapshot(stored)
            for event in stored.feed_events:
                yield to_json(event)
            if stored.content:
                yield {"type": "text", "content": stored.content}
            if stored.state != Message.State.STREAMING:
                feed = stored.feed
                yield to_json(
                    Done(str(answer_id), stored.state, feed.summary_icon, feed.summary_text)
                )
                return
        else:
            follower.start(answer_id)
            await send_turn_started(
                conversation.group_name, question_id=turn.question.pk, answer_id=answer_id
            )
            turn_launch(turn.answer)
        quiet = settings.GLASSBOX_HEARTBEAT_SECONDS * 2
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), quiet)
            except TimeoutError:
                # Quiet for a while: if the turn ended, its `done` was dropped on the way.
                events = await follower.ended(answer_id)
            else:
                if message.get("type") != "turn.event" or message["answer_id"] != answer_id:
                    continue
                events = await follower.admit(message)
            for event in events:
                yield event
                if event["type"] == "done":
                    return
    finally:
        await layer.group_discard(conversation.group_name, channel)


def sse(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
