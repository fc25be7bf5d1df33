"""The recorded event types are declared once: the rows' kinds are exactly those types."""

from __future__ import annotations

import typing

from activity.models import ActivityEvent
from activity.recording.events import RECORDED_TYPES, RecordedEvent


def test_the_rows_kinds_are_the_recorded_event_types():
    declared = set(typing.get_args(RecordedEvent))
    assert set(RECORDED_TYPES.values()) == declared
    assert {kind.value for kind in ActivityEvent.Kind} == set(RECORDED_TYPES)
    assert {cls.__dataclass_fields__["type"].default for cls in declared} == set(RECORDED_TYPES)
