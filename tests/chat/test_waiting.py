"""Every kind of wait for a person is a Waiting: answered by a request every surface reads
alike (chat.turns.actions), recording a declared event, listed by the inbox."""

from __future__ import annotations

import typing

from activity.recording.events import RecordedEvent
from chat.asks.waiting import KINDS
from chat.turns.actions import Request


def test_each_kind_is_answered_by_a_request_the_surfaces_read_and_records_an_event():
    requests, events = typing.get_args(Request), typing.get_args(RecordedEvent)
    for kind in KINDS:
        assert kind.answered_by in requests, kind
        assert kind.records in events, kind
    assert len({kind.kind for kind in KINDS}) == len(KINDS)
    assert len({kind.answered_by for kind in KINDS}) == len(KINDS)  # one kind per request
