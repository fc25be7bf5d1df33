"""What a test reads of stored rows, narrowed to what it expects to be there."""

from __future__ import annotations

from chat.models import Message


def answer_feed_id(answer: Message) -> int:
    """An answer's feed id, without reading the feed (a question has none)."""
    assert answer.feed_id is not None, f"message {answer.pk} is a question: it has no feed"
    return answer.feed_id
