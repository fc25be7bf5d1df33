"""Conversations written straight to the database: fast, for long histories and lists."""

from __future__ import annotations

import html
import re

from activity.models import ActivityFeed
from chat.models import Conversation, Message


def stored(owner, *pairs, title="Chat"):
    conversation = Conversation.objects.create(owner=owner, title=title)
    for question, answer in pairs:
        Message.objects.create(conversation=conversation, role="user", content=question)
        feed = ActivityFeed.objects.create(owner=owner, conversation_id=conversation.pk,
                                           state="complete")  # fmt: skip
        Message.objects.create(conversation=conversation, role="assistant", content=answer,
                               feed=feed)  # fmt: skip
    return conversation


def next_page(page: str) -> str:
    """The address of the list's next page, as a page's "More conversations" link gives it."""
    link = re.search(r'<li class="more"><a href="([^"]+)"', page)
    assert link is not None, "no next page"
    return "/" + html.unescape(link.group(1))
